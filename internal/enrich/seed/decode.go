package seed

// The decoding of the vendor's 2xx answers (/work/shared/vendor-api.md,
// section 1): a profile record, an email object, a phone list, a bulk
// answer paired by "index". What each status means is wire.go's.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/enrichq/enrichq/internal/enrich"
)

// errMalformed wraps every decoding failure of a 2xx body.
var errMalformed = errors.New("malformed response")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// decodeProfile reads the 200 answer of /v1/profile: the record itself. A
// record without profile_url (or a JSON null) is a no-match: nil, nil.
func decodeProfile(body []byte) (*enrich.Profile, error) {
	return parseProfileRecord(body)
}

// parseProfileRecord reads one profile record:
// {"profile_url", "name", "headline", "company", "role", "location",
// "company_size", "industry", "technographics": [...]}. Every field but
// profile_url may be absent, null, or of an unexpected type (then it is left
// empty; Raw keeps it). Unknown fields are kept in Raw.
func parseProfileRecord(raw []byte) (*enrich.Profile, error) {
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
	return &enrich.Profile{
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

// profileEmployer is where a profile's record says the person works now:
// its company, and its company's website or domain where it carries one
// (company_website, company_domain: not in the contract, read when sent).
func profileEmployer(p *enrich.Profile) enrich.Employer {
	var w struct {
		Website enrich.LooseString `json:"company_website"`
		Domain  enrich.LooseString `json:"company_domain"`
	}
	_ = json.Unmarshal(p.Raw, &w)
	return enrich.Employer{Websites: []string{string(w.Website), string(w.Domain)}, Names: []string{p.Company}}
}

// profileWire is a profile record as sent.
type profileWire struct {
	ProfileURL     json.RawMessage    `json:"profile_url"`
	Name           enrich.LooseString `json:"name"`
	Headline       enrich.LooseString `json:"headline"`
	Company        enrich.LooseString `json:"company"`
	Role           enrich.LooseString `json:"role"`
	Location       enrich.LooseString `json:"location"`
	CompanySize    enrich.LooseString `json:"company_size"`
	Industry       enrich.LooseString `json:"industry"`
	Technographics looseList          `json:"technographics"`
}

// looseList decodes the non-empty string members of a JSON list, nil for
// anything else (never an error).
type looseList []string

func (l *looseList) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '[' {
		return nil
	}
	var list []enrich.LooseString
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
func decodeBulk(body []byte, n int) ([]enrich.BulkItem, error) {
	results, err := bulkResults(body)
	if err != nil {
		return nil, err
	}
	items := make([]enrich.BulkItem, n)
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
			items[i] = enrich.BulkItem{Err: rowTransient("missing_result", "the vendor's answer has no result for this row")}
		case seen[i] > 1:
			items[i] = enrich.BulkItem{Err: rowTransient("duplicate_result", "the vendor's answer has several results for this row")}
		}
	}
	return items, nil
}

func bulkItem(f bulkResult) enrich.BulkItem {
	if raw := f.Error; len(raw) > 0 && !isNull(raw) {
		var e struct {
			Code    any `json:"code"`
			Message any `json:"message"`
		}
		_ = json.Unmarshal(raw, &e)
		code := enrich.Clip(looseText(e.Code), 100)
		if code == "" {
			code = "row_error"
		}
		return enrich.BulkItem{Err: &enrich.Error{
			Class:    rowErrorClass(code),
			Endpoint: endpointBulk,
			Code:     code,
			Message:  enrich.Clip(looseText(e.Message), 300),
		}}
	}
	var it enrich.BulkItem
	var err error
	if raw := f.Profile; len(raw) > 0 { // absent: no match
		if it.Profile, err = parseProfileRecord(raw); err != nil {
			return enrich.BulkItem{Err: rowTransient("malformed_result", err.Error())}
		}
	}
	if raw := bytes.TrimSpace(f.Email); len(raw) > 0 { // absent: no match
		if it.Email, err = parseEmail(raw); err != nil {
			return enrich.BulkItem{Err: rowTransient("malformed_result", err.Error())}
		}
	}
	nums, err := enrich.ParsePhoneList(f.Phones)
	if err != nil {
		return enrich.BulkItem{Err: rowTransient("malformed_result", err.Error())}
	}
	if len(nums) > 0 {
		raw, _ := json.Marshal(map[string]json.RawMessage{"phones": f.Phones})
		it.Phones = &enrich.Phones{Numbers: nums, Raw: raw}
	}
	return it
}

func rowTransient(code, msg string) *enrich.Error {
	return &enrich.Error{Class: enrich.ClassTransient, Endpoint: endpointBulk, Code: code, Message: msg, OutcomeUnknown: true}
}

func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

// ParseProfileRaw reads a profile record as kept in Profile.Raw (the
// kind's ReadProfile): what it returns equals what the first decoding
// returned, Raw included.
func ParseProfileRaw(raw []byte) (*enrich.Profile, error) { return parseProfileRecord(raw) }

// parseEmail reads the vendor's email object (enrich.ParseEmailRaw): one
// whose address is not an address is malformed.
func parseEmail(raw []byte) (*enrich.Email, error) {
	em, err := enrich.ParseEmailRaw(raw)
	if err == nil && em != nil && enrich.AddressHost(em.Address) == "" {
		return nil, fmt.Errorf("email %q is not an address", enrich.Clip(em.Address, 80))
	}
	return em, err
}
