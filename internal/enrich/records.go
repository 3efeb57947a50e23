package enrich

// The records a stage's answer is kept as (Email.Raw, Phones.Raw): the
// seed's answers, which the other adapters write alike, so that a cached
// email or phone is read back by one parser whatever vendor answered it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// errMalformed wraps every failure to read a record.
var errMalformed = errors.New("malformed response")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// ParseEmailRaw reads an email object: {"email", "confidence", "verified"}
// (the seed's answer of /v1/email). A null, absent or empty email is a
// no-match: nil, nil.
func ParseEmailRaw(raw []byte) (*Email, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, malformed("empty body")
	}
	if isNull(raw) {
		return nil, nil
	}
	var f struct {
		Email      LooseString     `json:"email"`
		Confidence json.RawMessage `json:"confidence"`
		Verified   json.RawMessage `json:"verified"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, malformed("email: %v", err)
	}
	addr := string(f.Email)
	if strings.TrimSpace(addr) == "" {
		return nil, nil
	}
	var e = &Email{Address: addr, Raw: bytes.Clone(raw)}
	_ = json.Unmarshal(f.Confidence, &e.Confidence) // absent or not a number: 0
	_ = json.Unmarshal(f.Verified, &e.Verified)     // absent or not a bool: false
	return e, nil
}

// ParsePhonesRaw reads an object whose "phones" member is the list (the
// seed's answer of /v1/phone, assumed):
// {"phones": [{"number": "+14155550100", "type": "mobile", "country": "US"}]}.
// Empty or absent phones (or entries without a number) are a no-match: nil, nil.
func ParsePhonesRaw(body []byte) (*Phones, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, malformed("empty body")
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, malformed("phone: %v", err)
	}
	nums, err := ParsePhoneList(f["phones"])
	if err != nil || len(nums) == 0 {
		return nil, err
	}
	return &Phones{Numbers: nums, Raw: bytes.Clone(body)}, nil
}

// ParsePhoneList reads a list of phone entries; entries without a number are
// skipped, a list of another type is malformed.
func ParsePhoneList(raw json.RawMessage) ([]Phone, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	var list []struct {
		Number  LooseString `json:"number"`
		Type    LooseString `json:"type"`
		Country LooseString `json:"country"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, malformed("phones: %v", err)
	}
	var out []Phone
	for _, p := range list {
		n := Phone{Number: string(p.Number), Type: string(p.Type), Country: string(p.Country)}
		if strings.TrimSpace(n.Number) != "" {
			out = append(out, n)
		}
	}
	return out, nil
}

func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

// LooseString decodes a JSON string and leaves anything else "" (never an
// error): a record's field of an unexpected type is left empty.
type LooseString string

func (s *LooseString) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' {
		return nil
	}
	// The decoder has checked the whole input already: a string without
	// escapes and in valid UTF-8 is its bytes between the quotes.
	if in := b[1 : len(b)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		*s = LooseString(in)
		return nil
	}
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = LooseString(v)
	}
	return nil
}
