package enrich

// This file holds every assumption about the vendor's wire format
// (/work/shared/vendor-api.md, section 1): paths, parameters, headers, JSON
// shapes, and what each status code means (classify). Adapting the client to
// a real vendor's exact shapes is a change of this file only.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/enrichq/enrichq/internal/domain"
)

// MaxBulkRows is the most rows one /v1/bulk call takes (assumed).
const MaxBulkRows = 100

// Endpoints: the path of each, and its name in errors and logs.
const (
	pathProfile = "/v1/profile"
	pathEmail   = "/v1/email"
	pathPhone   = "/v1/phone"
	pathBulk    = "/v1/bulk"

	endpointProfile = "profile"
	endpointEmail   = "email"
	endpointPhone   = "phone"
	endpointBulk    = "bulk"
)

// Headers.
const (
	headerAuthorization    = "Authorization" // "Bearer <key>" (given)
	headerIdempotencyKey   = "Idempotency-Key"
	headerCreditsCharged   = "X-Credits-Charged"
	headerCreditsRemaining = "X-Credits-Remaining"
	// headerReplayed (assumed, as Stripe does it): "true" on an answer
	// replayed for its Idempotency-Key, charged nothing. Without it a replay
	// looks like a fresh answer and nothing is reconciled.
	headerReplayed        = "Idempotent-Replayed"
	headerRetryAfter      = "Retry-After"
	headerRateLimitLimit  = "X-RateLimit-Limit"
	headerRateLimitRemain = "X-RateLimit-Remaining"
	headerRateLimitReset  = "X-RateLimit-Reset"
)

// setRequestHeaders sets the headers every request carries: the API key as a
// Bearer token (given), Accept JSON, the Idempotency-Key when there is one
// (assumed: the vendor may honour it).
func setRequestHeaders(h http.Header, apiKey, idempotencyKey string, jsonBody bool) {
	h.Set(headerAuthorization, "Bearer "+apiKey)
	h.Set("Accept", "application/json")
	if jsonBody {
		h.Set("Content-Type", "application/json")
	}
	if idempotencyKey != "" {
		h.Set(headerIdempotencyKey, idempotencyKey)
	}
}

// Query parameters of /v1/profile, /v1/email and /v1/phone, and keys of a bulk row.
const (
	paramProfileURL = "profile_url"
	paramName       = "name"
	paramCompany    = "company"
	paramDomain     = "domain" // (assumed) a bare host name: acme.com
	paramEmail      = "email"
)

// profileParams are the query parameters of GET /v1/profile for q.
func profileParams(q ProfileQuery) url.Values {
	v := url.Values{}
	for k, s := range wireRow(q) {
		v.Set(k, s)
	}
	return v
}

// lookupParams are the query parameters of GET /v1/email and GET /v1/phone.
func lookupParams(profileURL string) url.Values {
	return url.Values{paramProfileURL: {profileURL}}
}

// wireRow is q as the vendor takes it, in a query string or as a bulk row.
func wireRow(q ProfileQuery) map[string]string {
	switch q.Kind() {
	case domain.InputProfileURL:
		return map[string]string{paramProfileURL: q.ProfileURL}
	case domain.InputEmail:
		return map[string]string{paramEmail: q.Email}
	case domain.InputNameCompany:
		return map[string]string{paramName: q.Name, paramCompany: q.Company}
	case domain.InputNameDomain:
		return map[string]string{paramName: q.Name, paramDomain: q.Domain}
	}
	return nil
}

// wireStage is a stage's name in the "include" list of /v1/bulk; "" means it
// is not sent (profiles are always looked up).
func wireStage(s domain.Stage) string {
	switch s {
	case domain.StageEmail:
		return "email"
	case domain.StagePhone:
		return "phone"
	}
	return ""
}

// bulkRequest is the body of POST /v1/bulk (assumed shape):
// {"rows": [{"profile_url": "..."}, {"name": "...", "company": "..."}, {"name": "...", "domain": "acme.com"}],
// "include": ["email", "phone"]}
type bulkRequest struct {
	Rows    []map[string]string `json:"rows"`
	Include []string            `json:"include,omitempty"`
}

func bulkBody(rows []ProfileQuery, include []domain.Stage) ([]byte, error) {
	req := bulkRequest{Rows: make([]map[string]string, len(rows))}
	for i, q := range rows {
		req.Rows[i] = wireRow(q)
	}
	for _, s := range include {
		if w := wireStage(s); w != "" {
			req.Include = append(req.Include, w)
		}
	}
	return json.Marshal(req) // map keys are sorted: the same rows give the same bytes
}

// answer is what classify makes of a response that is not an error.
type answer int

const (
	answerBody    answer = iota // decode the body: a match, or a no-match shaped as a 200
	answerNoMatch               // no match, nothing to decode
)

// classify is the one place that decides what a vendor answer means. It
// returns answerBody or answerNoMatch with a nil error, or an *Error with its
// class, status, code, message and Retry-After. Credit and rate-limit headers
// are the caller's (they apply to every answer).
func classify(endpoint string, status int, h http.Header, body []byte, now time.Time) (answer, *Error) {
	if status >= 200 && status <= 299 {
		return answerBody, nil
	}
	if status == http.StatusNotFound && endpoint != endpointBulk {
		return answerNoMatch, nil // no match (the vendor's status for it is not given)
	}
	code, msg := errorBody(body)
	e := &Error{Endpoint: endpoint, Status: status, Code: code, Message: msg}
	switch {
	case status == http.StatusTooManyRequests:
		e.Class = ClassRateLimited
		e.RetryAfter = parseRetryAfter(h.Get(headerRetryAfter), now)
	case status == http.StatusUnauthorized:
		e.Class = ClassUnauthorized
	case status == http.StatusForbidden:
		e.Class = ClassForbidden // code "plan_required": the plan has no API access
	case status == http.StatusRequestTimeout, // the vendor gave up reading the request
		status == http.StatusConflict, // a request with the same Idempotency-Key is in progress
		status == http.StatusTooEarly:
		e.Class = ClassTransient
	case status == http.StatusNotFound: // on /v1/bulk: the endpoint is not there, not a no-match
		e.Class = ClassPermanent
	case status >= 400 && status <= 499: // 400, 413, 422 and the rest: bad input
		e.Class = ClassPermanent
	case status == http.StatusServiceUnavailable:
		e.Class = ClassTransient // refused, not processed
		e.RetryAfter = parseRetryAfter(h.Get(headerRetryAfter), now)
	case status >= 500:
		e.Class = ClassTransient
		e.OutcomeUnknown = true // a 500, 502 or 504 may come after the work was done
		e.RetryAfter = parseRetryAfter(h.Get(headerRetryAfter), now)
	default: // 1xx, 3xx: not an answer of this API
		e.Class = ClassTransient
	}
	if e.Code == "" {
		e.Code = strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_"))
	}
	return 0, e
}

// rowErrorClass is the class of a per-row error of /v1/bulk, by its code:
// bad input is permanent for that row; the vendor's own trouble is transient.
func rowErrorClass(code string) Class {
	switch code {
	case "rate_limited", "too_many_requests":
		return ClassRateLimited
	case "internal_error", "internal", "unavailable", "service_unavailable", "timeout", "upstream_error":
		return ClassTransient
	}
	return ClassPermanent
}

// errorBody reads {"error": {"code": "...", "message": "..."}}; a body of
// another shape gives no code and a short printable excerpt as the message.
func errorBody(body []byte) (code, msg string) {
	var w struct {
		Error *struct {
			Code    any `json:"code"`
			Message any `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &w); err == nil && w.Error != nil {
		return Clip(looseText(w.Error.Code), 100), Clip(looseText(w.Error.Message), 300)
	}
	return "", Clip(string(body), 200)
}

// looseText is a JSON scalar as text ("" for null, objects, arrays).
func looseText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP date; 0 when
// absent, unparsable or in the past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(math.MaxInt64/time.Second) {
			secs = int64(math.MaxInt64 / time.Second)
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// parseCharge reads X-Credits-Charged and X-Credits-Remaining. A value that
// is not an integer (or a negative charge) counts as absent.
func parseCharge(h http.Header) Charge {
	var c Charge
	if v, err := strconv.ParseInt(strings.TrimSpace(h.Get(headerCreditsCharged)), 10, 64); err == nil && v >= 0 {
		c.Credits, c.Reported = v, true
	}
	if v, err := strconv.ParseInt(strings.TrimSpace(h.Get(headerCreditsRemaining)), 10, 64); err == nil {
		c.Remaining, c.RemainingReported = v, true
	}
	c.Replayed = strings.EqualFold(strings.TrimSpace(h.Get(headerReplayed)), "true")
	return c
}

// parseRateLimit reads X-RateLimit-*; nil when none is present.
func parseRateLimit(h http.Header) *RateLimit {
	rl := RateLimit{Limit: -1, Remaining: -1, ResetIn: -1}
	found := false
	for name, dst := range map[string]*int64{
		headerRateLimitLimit:  &rl.Limit,
		headerRateLimitRemain: &rl.Remaining,
		headerRateLimitReset:  &rl.ResetIn,
	} {
		if v, err := strconv.ParseInt(strings.TrimSpace(h.Get(name)), 10, 64); err == nil && v >= 0 {
			*dst, found = v, true
		}
	}
	if !found {
		return nil
	}
	return &rl
}

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
