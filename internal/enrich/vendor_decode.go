package enrich

// The decoding of the vendor's 2xx answers (/work/shared/vendor-api.md,
// section 1): a profile record, an email object, a phone list, a bulk
// answer paired by "index". What each status means is vendor_wire.go's.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// errMalformed wraps every decoding failure of a 2xx body.
var errMalformed = errors.New("malformed response")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// decodeProfile reads the 200 answer of /v1/profile: the record itself. A
// record without profile_url (or a JSON null) is a no-match: nil, nil.
func decodeProfile(body []byte) (*Profile, error) {
	return parseProfileRecord(body)
}

// parseProfileRecord reads one profile record:
// {"profile_url", "name", "headline", "company", "role", "location",
// "company_size", "industry", "technographics": [...]}. Every field but
// profile_url may be absent, null, or of an unexpected type (then it is left
// empty; Raw keeps it). Unknown fields are kept in Raw.
func parseProfileRecord(raw []byte) (*Profile, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, malformed("empty body")
	}
	// One pass over the record (it is the bulk answer's bulk): the loose
	// fields take what is a string (or a list of strings) and ignore the rest.
	var f profileWire
	if raw[0] != '{' && !isNull(raw) {
		return nil, malformed("profile: not a JSON object")
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, malformed("profile: %v", err)
	}
	if len(f.ProfileURL) == 0 || isNull(f.ProfileURL) { // null, or no profile_url
		return nil, nil
	}
	var profileURL string
	if err := json.Unmarshal(f.ProfileURL, &profileURL); err != nil {
		return nil, malformed("profile: profile_url is not a string")
	}
	if strings.TrimSpace(profileURL) == "" {
		return nil, nil
	}
	return &Profile{
		ProfileURL:     profileURL,
		Name:           string(f.Name),
		Headline:       string(f.Headline),
		Company:        string(f.Company),
		Role:           string(f.Role),
		Location:       string(f.Location),
		CompanySize:    string(f.CompanySize),
		Industry:       string(f.Industry),
		Technographics: f.Technographics,
		Raw:            bytes.Clone(raw),
	}, nil
}

// profileWire is a profile record as sent.
type profileWire struct {
	ProfileURL     json.RawMessage `json:"profile_url"`
	Name           looseStr        `json:"name"`
	Headline       looseStr        `json:"headline"`
	Company        looseStr        `json:"company"`
	Role           looseStr        `json:"role"`
	Location       looseStr        `json:"location"`
	CompanySize    looseStr        `json:"company_size"`
	Industry       looseStr        `json:"industry"`
	Technographics looseList       `json:"technographics"`
}

// looseStr decodes a JSON string and leaves anything else "" (never an error).
type looseStr string

func (s *looseStr) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' {
		return nil
	}
	// The decoder has checked the whole input already: a string without
	// escapes and in valid UTF-8 is its bytes between the quotes.
	if in := b[1 : len(b)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		*s = looseStr(in)
		return nil
	}
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = looseStr(v)
	}
	return nil
}

// looseList decodes the non-empty string members of a JSON list, nil for
// anything else (never an error).
type looseList []string

func (l *looseList) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '[' {
		return nil
	}
	var list []looseStr
	var out []string
	if json.Unmarshal(b, &list) == nil {
		for _, v := range list {
			if v != "" {
				out = append(out, string(v))
			}
		}
	}
	*l = out
	return nil
}

// decodeEmail reads the 200 answer of /v1/email:
// {"email": "...", "confidence": 0.0-1.0, "verified": true|false}. A null,
// absent or empty email is a no-match: nil, nil.
func decodeEmail(body []byte) (*Email, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, malformed("empty body")
	}
	return parseEmailObject(body)
}

func parseEmailObject(raw []byte) (*Email, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	var f struct {
		Email      looseStr        `json:"email"`
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

// decodePhones reads the 200 answer of /v1/phone (assumed):
// {"phones": [{"number": "+14155550100", "type": "mobile", "country": "US"}]}.
// Empty or absent phones (or entries without a number) are a no-match: nil, nil.
func decodePhones(body []byte) (*Phones, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, malformed("empty body")
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, malformed("phone: %v", err)
	}
	nums, err := parsePhoneList(f["phones"])
	if err != nil || len(nums) == 0 {
		return nil, err
	}
	return &Phones{Numbers: nums, Raw: bytes.Clone(body)}, nil
}

// parsePhoneList reads a list of phone entries; entries without a number are
// skipped, a list of another type is malformed.
func parsePhoneList(raw json.RawMessage) ([]Phone, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	var list []struct {
		Number  looseStr `json:"number"`
		Type    looseStr `json:"type"`
		Country looseStr `json:"country"`
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

// bulkResponse is the 200 answer of /v1/bulk (assumed shape):
// {"results": [{"index": 0, "profile": {...}|null, "email": {...}|null,
// "phones": [...]|null, "error": {"code", "message"}}]}
type bulkResponse struct {
	Results *[]bulkResult `json:"results"`
}

// bulkResult is one result of a bulk answer, its parts left raw: each is
// decoded once, by the parser of its kind.
type bulkResult struct {
	ok bool // an object (not null, not another type)
	bulkFields
}

// bulkFields are the parts of a bulk result.
type bulkFields struct {
	Index   json.RawMessage `json:"index"`
	Profile json.RawMessage `json:"profile"`
	Email   json.RawMessage `json:"email"`
	Phones  json.RawMessage `json:"phones"`
	Error   json.RawMessage `json:"error"`
}

// UnmarshalJSON takes an object and leaves anything else not ok, without
// failing the whole answer for one bad result.
func (r *bulkResult) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	var f bulkFields
	if json.Unmarshal(b, &f) != nil {
		return nil
	}
	*r = bulkResult{ok: true, bulkFields: f}
	return nil
}

// bulkResults decodes the results of a bulk answer. When every result is an
// object (or null) that is one pass into plain structs, the answer's usual
// shape; when one is not, the answer is decoded again result by result
// (bulkResult.UnmarshalJSON), so that a bad result spoils only its own row.
// A null result has no index either way: it answers no row.
func bulkResults(body []byte) ([]bulkResult, error) {
	var plain struct {
		Results *[]*bulkFields `json:"results"`
	}
	if json.Unmarshal(body, &plain) == nil && plain.Results != nil {
		out := make([]bulkResult, len(*plain.Results))
		for i, f := range *plain.Results {
			if f != nil { // else null
				out[i] = bulkResult{ok: true, bulkFields: *f}
			}
		}
		return out, nil
	}
	return bulkResultsOneByOne(body)
}

// bulkResultsOneByOne decodes the results of a bulk answer one by one.
func bulkResultsOneByOne(body []byte) ([]bulkResult, error) {
	var w bulkResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, malformed("bulk: %v", err)
	}
	if w.Results == nil {
		return nil, malformed("bulk: no results")
	}
	return *w.Results, nil
}

// decodeBulk reads a /v1/bulk answer for n rows sent. Results are matched by
// "index", never by position; a row without exactly one result (missing,
// duplicate) or whose result does not parse gets a transient per-row error
// whose outcome is unknown. A body that is not this shape is an error.
func decodeBulk(body []byte, n int) ([]BulkItem, error) {
	results, err := bulkResults(body)
	if err != nil {
		return nil, err
	}
	items := make([]BulkItem, n)
	seen := make([]int, n)
	for _, r := range results {
		if !r.ok {
			continue // cannot tell which row it answers: that row ends up missing
		}
		var idx int
		if err := json.Unmarshal(r.Index, &idx); err != nil || idx < 0 || idx >= n {
			continue
		}
		seen[idx]++
		if seen[idx] > 1 {
			continue
		}
		items[idx] = bulkItem(r)
	}
	for i := range items {
		switch {
		case seen[i] == 0:
			items[i] = BulkItem{Err: rowTransient("missing_result", "the vendor's answer has no result for this row")}
		case seen[i] > 1:
			items[i] = BulkItem{Err: rowTransient("duplicate_result", "the vendor's answer has several results for this row")}
		}
	}
	return items, nil
}

func bulkItem(f bulkResult) BulkItem {
	if raw := f.Error; len(raw) > 0 && !isNull(raw) {
		var e struct {
			Code    any `json:"code"`
			Message any `json:"message"`
		}
		_ = json.Unmarshal(raw, &e)
		code := Clip(looseText(e.Code), 100)
		if code == "" {
			code = "row_error"
		}
		return BulkItem{Err: &Error{
			Class:    rowErrorClass(code),
			Endpoint: endpointBulk,
			Code:     code,
			Message:  Clip(looseText(e.Message), 300),
		}}
	}
	var it BulkItem
	var err error
	if raw := f.Profile; len(raw) > 0 { // absent: no match
		if it.Profile, err = parseProfileRecord(raw); err != nil {
			return BulkItem{Err: rowTransient("malformed_result", err.Error())}
		}
	}
	if it.Email, err = parseEmailObject(bytes.TrimSpace(f.Email)); err != nil {
		return BulkItem{Err: rowTransient("malformed_result", err.Error())}
	}
	nums, err := parsePhoneList(f.Phones)
	if err != nil {
		return BulkItem{Err: rowTransient("malformed_result", err.Error())}
	}
	if len(nums) > 0 {
		raw, _ := json.Marshal(map[string]json.RawMessage{"phones": f.Phones})
		it.Phones = &Phones{Numbers: nums, Raw: raw}
	}
	return it
}

func rowTransient(code, msg string) *Error {
	return &Error{Class: ClassTransient, Endpoint: endpointBulk, Code: code, Message: msg, OutcomeUnknown: true}
}

func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

// The parsers of a stage's answer as kept in its Raw (Profile.Raw,
// Email.Raw, Phones.Raw), for answers stored and read back: what they
// return equals what the first decoding returned, Raw included.

// ParseProfileRaw reads a profile record.
func ParseProfileRaw(raw []byte) (*Profile, error) { return parseProfileRecord(raw) }

// ParseEmailRaw reads an email object: {"email", "confidence", "verified"}.
func ParseEmailRaw(raw []byte) (*Email, error) { return decodeEmail(raw) }

// ParsePhonesRaw reads an object whose "phones" member is the list.
func ParsePhonesRaw(raw []byte) (*Phones, error) { return decodePhones(raw) }
