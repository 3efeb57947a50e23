package pdl

// This file holds every assumption about the vendor's wire, the People Data
// Labs v5 person API as the project's vendor-pdl.md condenses it (summarised
// in docs/vendors.md): paths, parameters, headers, JSON shapes, what each
// status code means (classify, itemError), and how a person record maps onto
// enrich's Profile, Email and Phones; what an answer's headers say is in
// wire_headers.go. Adapting to the real vendor's exact shapes is a change of
// these two files only.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/ingest"
)

// Limits of the bulk endpoint: 1 to MaxBulk requests per call; the vendor
// advises DefaultBatchSize at most (above it may answer 502).
const (
	MaxBulk          = 100
	DefaultBatchSize = 80
)

// CreditsPerMatch is what a match costs, single or bulk item; a no-match
// (404) costs nothing. The vendor's X-Call-Credits-Spent is the truth of a
// call; this is the price list for reservations and when it is absent.
const CreditsPerMatch = 1

// Paths (under the base URL) and their names in errors and logs.
const (
	pathEnrich = "/v5/person/enrich"
	pathBulk   = "/v5/person/bulk"

	endpointEnrich = "person_enrich"
	endpointBulk   = "person_bulk"
)

// Headers.
const (
	headerAPIKey       = "X-Api-Key"              // the key itself, not a Bearer token
	headerCreditsSpent = "X-Call-Credits-Spent"   // credits this call cost (on every 200, assumed)
	headerRemaining    = "X-TotalLimit-Remaining" // credits left on the key
	headerRateReset    = "X-RateLimit-Reset"      // UTC time the fixed 60 s window ends
	headerRateRemain   = "X-RateLimit-Remaining"
	headerRateLimit    = "X-RateLimit-Limit"
	// The balance split: credits bought still left, and overage credits
	// still allowed (X-TotalLimit-Remaining is their sum).
	headerPurchased  = "X-TotalLimit-Purchased-Remaining"
	headerOverages   = "X-TotalLimit-Overages-Remaining"
	headerRetryAfter = "Retry-After" // not promised; honoured when X-RateLimit-Reset says nothing
)

// setRequestHeaders sets what every request carries. No Idempotency-Key:
// the vendor takes none (a resent call is billed again). A body is JSON,
// gzipped as PDL's Go client sends it (a bulk of 100 is ten times smaller).
func setRequestHeaders(h http.Header, apiKey string, jsonBody bool) {
	h.Set(headerAPIKey, apiKey)
	h.Set("Accept", "application/json")
	if jsonBody {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Encoding", "gzip")
	}
}

// Parameters of a lookup (query string of the single enrich, "params" of a
// bulk request).
const (
	paramProfile       = "profile" // a profile URL
	paramEmail         = "email"
	paramName          = "name"    // a full name
	paramCompany       = "company" // a company name, website or domain
	paramMinLikelihood = "min_likelihood"
	paramRequired      = "required"
)

// params is q as the vendor takes it, with its match settings: strings,
// and min_likelihood a number (as PDL's clients send it; in a query string
// it is its digits). A role title is not an identity here: the caller
// refuses it before.
func params(q enrich.ProfileQuery, minLikelihood int, required string) map[string]any {
	p := map[string]any{}
	switch q.Kind() {
	case domain.InputProfileURL:
		p[paramProfile] = q.ProfileURL
	case domain.InputEmail:
		p[paramEmail] = q.Email
	case domain.InputNameCompany:
		p[paramName], p[paramCompany] = q.Name, q.Company
	case domain.InputNameDomain:
		p[paramName], p[paramCompany] = q.Name, q.Domain
	}
	if minLikelihood > 0 {
		p[paramMinLikelihood] = minLikelihood
	}
	if required != "" {
		p[paramRequired] = required
	}
	return p
}

func queryOf(p map[string]any) url.Values {
	v := url.Values{}
	for k, s := range p {
		v.Set(k, fmt.Sprint(s))
	}
	return v
}

// metadataKey is the member of "metadata" that numbers a bulk request; the
// vendor echoes metadata unchanged on its item, and items are paired by it.
// Its value is a string, as every PDL client sends metadata.
const metadataKey = "enrichq_item"

type bulkRequest struct {
	Requests []bulkRequestItem `json:"requests"`
}

type bulkRequestItem struct {
	Params   map[string]any    `json:"params"`
	Metadata map[string]string `json:"metadata"`
}

// bulkBody is {"requests": [{"params": {...}, "metadata": {"enrichq_item": "j"}}, ...]},
// gzipped.
func bulkBody(ps []map[string]any) ([]byte, error) {
	req := bulkRequest{Requests: make([]bulkRequestItem, len(ps))}
	for j, p := range ps {
		req.Requests[j] = bulkRequestItem{Params: p, Metadata: map[string]string{metadataKey: strconv.Itoa(j)}}
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// answer is what classify makes of a response that is not an error.
type answer int

const (
	answerBody    answer = iota // a 200 to decode
	answerNoMatch               // a 404 of the single enrich
)

// classify is the one place that decides what a call's status means. It
// returns answerBody or answerNoMatch, or an *enrich.Error with its class.
// Headers of money and rate are the caller's.
func classify(endpoint string, status int, h http.Header, body []byte, now time.Time) (answer, *enrich.Error) {
	if status == http.StatusOK {
		return answerBody, nil
	}
	if status == http.StatusNotFound && endpoint == endpointEnrich {
		return answerNoMatch, nil // free
	}
	code, msg := errorBody(body)
	e := &enrich.Error{Endpoint: endpoint, Status: status, Code: code, Message: msg}
	switch {
	case status == http.StatusUnauthorized:
		e.Class = enrich.ClassUnauthorized
	case status == http.StatusPaymentRequired:
		e.Class = enrich.ClassOutOfCredits // the whole call, nothing billed
	case status == http.StatusForbidden:
		e.Class = enrich.ClassForbidden
	case status == http.StatusTooManyRequests:
		e.Class = enrich.ClassRateLimited
		e.RetryAfter = retryAfter(h, now)
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly:
		e.Class = enrich.ClassTransient
	case status >= 400 && status <= 499: // 400 invalid_request_error, 405, and a 404 of the bulk path
		e.Class = enrich.ClassPermanent
	case status == http.StatusServiceUnavailable:
		e.Class = enrich.ClassTransient // refused, not processed
		e.RetryAfter = retryAfter(h, now)
	case status >= 500: // 500, 502 (a batch too large), 504: the work may have been done
		e.Class = enrich.ClassTransient
		e.OutcomeUnknown = true
	default: // 1xx, another 2xx, 3xx: not an answer of this API
		e.Class = enrich.ClassTransient
		e.OutcomeUnknown = status >= 200 && status <= 299
	}
	if e.Code == "" {
		e.Code = strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_"))
	}
	return 0, e
}

// itemError is the error of a bulk item whose status is neither 200 nor 404
// (nil for those). Only a 200 item is billed, so none of these is.
func itemError(status int, raw json.RawMessage) *enrich.Error {
	code, msg := errorObject(raw)
	e := &enrich.Error{Endpoint: endpointBulk, Status: status, Code: code, Message: msg}
	switch {
	case status == http.StatusPaymentRequired:
		e.Class = enrich.ClassOutOfCredits
	case status == http.StatusTooManyRequests:
		e.Class = enrich.ClassRateLimited
	case status >= 500, status == http.StatusRequestTimeout:
		e.Class = enrich.ClassTransient
	default: // 400 and the rest: bad input for that item
		e.Class = enrich.ClassPermanent
	}
	if e.Code == "" {
		e.Code = "item_error"
	}
	return e
}

// errorBody reads {"status": N, "error": {"type": "...", "message": "..."}};
// another shape gives no code and a short excerpt as the message.
func errorBody(body []byte) (code, msg string) {
	var w struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &w) == nil && len(w.Error) > 0 && w.Error[0] == '{' {
		return errorObject(w.Error)
	}
	return "", enrich.Clip(string(body), 200)
}

func errorObject(raw json.RawMessage) (code, msg string) {
	var e struct {
		Type    enrich.LooseString `json:"type"`
		Message enrich.LooseString `json:"message"`
	}
	_ = json.Unmarshal(raw, &e)
	return enrich.Clip(string(e.Type), 100), enrich.Clip(string(e.Message), 300)
}

// errMalformed wraps every decoding failure of a 200 body.
var errMalformed = errors.New("malformed response")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// personWire is a match: {"status": 200, "likelihood": 1-10, "data": {...}}
// (single), or a bulk item, which adds "metadata" and, when not a match,
// "error" in place of "data".
type personWire struct {
	Status     json.RawMessage `json:"status"`
	Likelihood json.RawMessage `json:"likelihood"`
	Data       json.RawMessage `json:"data"`
	Metadata   json.RawMessage `json:"metadata"`
	Error      json.RawMessage `json:"error"`
}

// found is a person record turned into enrich's parts.
type found struct {
	profile *enrich.Profile
	email   *enrich.Email
	phones  *enrich.Phones
	// data is the record, to check it is the person asked for.
	data json.RawMessage
	// hidden: contact fields came as true/false (a Free plan), not values.
	hidden bool
}

// decodeSingle reads the 200 answer of the single enrich.
func decodeSingle(body []byte) (found, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return found{}, malformed("not a JSON object")
	}
	var w personWire
	if err := json.Unmarshal(body, &w); err != nil {
		return found{}, malformed("%v", err)
	}
	return decodeMatch(w)
}

// decodeMatch maps a match's data; a match without a data object is malformed.
func decodeMatch(w personWire) (found, error) {
	data := bytes.TrimSpace(w.Data)
	if len(data) == 0 || data[0] != '{' {
		return found{}, malformed("a match without a data object")
	}
	var likelihood float64
	_ = json.Unmarshal(w.Likelihood, &likelihood) // absent or not a number: 0
	return decodeData(data, likelihood)
}

// dataWire are the fields of a person record enrichq reads. Any may be
// null or of another type (then it is empty here; Profile.Raw keeps it).
type dataWire struct {
	FullName           enrich.LooseString `json:"full_name"`
	LinkedinURL        enrich.LooseString `json:"linkedin_url"` // without a scheme: "platform.example/in/jane-doe"
	JobTitle           enrich.LooseString `json:"job_title"`
	JobCompanyName     enrich.LooseString `json:"job_company_name"`
	JobCompanyWebsite  enrich.LooseString `json:"job_company_website"` // kept in Raw: Profile has no website
	JobCompanySize     enrich.LooseString `json:"job_company_size"`
	JobCompanyIndustry enrich.LooseString `json:"job_company_industry"`
	LocationName       enrich.LooseString `json:"location_name"`
	WorkEmail          enrich.LooseString `json:"work_email"`
	PersonalEmails     looseList          `json:"personal_emails"`
	MobilePhone        enrich.LooseString `json:"mobile_phone"`
	PhoneNumbers       looseList          `json:"phone_numbers"`
}

// contactsWire are the contact fields, raw: on a Free plan each is true or
// false (the record has one or not), never the value.
type contactsWire struct {
	WorkEmail      json.RawMessage `json:"work_email"`
	PersonalEmails json.RawMessage `json:"personal_emails"`
	MobilePhone    json.RawMessage `json:"mobile_phone"`
	PhoneNumbers   json.RawMessage `json:"phone_numbers"`
}

// contactsHidden reports whether a contact field of data is true: the
// record has it, and the key's plan hides it.
func contactsHidden(data []byte) bool {
	var c contactsWire
	if json.Unmarshal(data, &c) != nil {
		return false
	}
	for _, r := range []json.RawMessage{c.WorkEmail, c.PersonalEmails, c.MobilePhone, c.PhoneNumbers} {
		if string(bytes.TrimSpace(r)) == "true" {
			return true
		}
	}
	return false
}

// decodeData maps a person record (data, a JSON object) onto a profile (only
// when it has a usable linkedin_url: a profile is known by its URL), an email
// (work_email, else the first personal email; confidence likelihood/10, not
// verified: the record says nothing of it) and phones (mobile_phone as a
// mobile, then the other phone_numbers).
func decodeData(data []byte, likelihood float64) (found, error) {
	var d dataWire
	if err := json.Unmarshal(data, &d); err != nil {
		return found{}, malformed("data: %v", err)
	}
	f := found{data: data}
	if u, ok := profileURL(string(d.LinkedinURL)); ok {
		f.profile = &enrich.Profile{
			ProfileURL:  u,
			Name:        string(d.FullName),
			Company:     string(d.JobCompanyName),
			Role:        string(d.JobTitle),
			Location:    string(d.LocationName),
			CompanySize: string(d.JobCompanySize),
			Industry:    string(d.JobCompanyIndustry),
			Raw:         bytes.Clone(data),
		}
	}
	addr, field := firstAddress(string(d.WorkEmail), d.PersonalEmails)
	if addr != "" {
		conf := math.Round(min(1, max(0, likelihood/10))*100) / 100
		raw, err := json.Marshal(emailRaw{Email: addr, Confidence: conf, Verified: false, Field: field})
		if err != nil {
			return found{}, err
		}
		f.email = &enrich.Email{Address: addr, Confidence: conf, Raw: raw}
	}
	var nums []phoneRaw
	seen := map[string]bool{}
	add := func(n, typ string) {
		if n = strings.TrimSpace(n); n != "" && !seen[n] {
			seen[n] = true
			nums = append(nums, phoneRaw{Number: n, Type: typ})
		}
	}
	add(string(d.MobilePhone), "mobile")
	for _, n := range d.PhoneNumbers {
		add(n, "")
	}
	if len(nums) > 0 {
		raw, err := json.Marshal(phonesRaw{Phones: nums})
		if err != nil {
			return found{}, err
		}
		ph := &enrich.Phones{Raw: raw}
		for _, n := range nums {
			ph.Numbers = append(ph.Numbers, enrich.Phone{Number: n.Number, Type: n.Type})
		}
		f.phones = ph
	}
	f.hidden = (f.email == nil || f.phones == nil) && contactsHidden(data) // a value found is not hidden
	return f, nil
}

// firstAddress is the record's email and the field it came from:
// work_email, else the first personal email, each only if it is an
// address (a field of junk is no email).
func firstAddress(work string, personal []string) (addr, field string) {
	if a := strings.TrimSpace(work); enrich.AddressHost(a) != "" {
		return a, "work_email"
	}
	for _, a := range personal {
		if a = strings.TrimSpace(a); enrich.AddressHost(a) != "" {
			return a, "personal_emails"
		}
	}
	return "", ""
}

// emailRaw is Email.Raw: the shape enrich.ParseEmailRaw reads back (the
// record's own data is the profile's Raw), plus the field it came from.
type emailRaw struct {
	Email      string  `json:"email"`
	Confidence float64 `json:"confidence"`
	Verified   bool    `json:"verified"`
	Field      string  `json:"field"`
}

// phonesRaw is Phones.Raw: the shape enrich.ParsePhonesRaw reads back.
type phonesRaw struct {
	Phones []phoneRaw `json:"phones"`
}

type phoneRaw struct {
	Number string `json:"number"`
	Type   string `json:"type,omitempty"`
}

// profileURL is linkedin_url as enrichq keeps profile URLs (an upload's
// canonical form: https, lower-case host without www., no trailing slash).
// The vendor writes it without a scheme.
func profileURL(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", false
	}
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := ingest.CanonicalProfileURL(s)
	return u, err == nil
}

// ParseProfileRaw reads a profile stored from this vendor (its Raw is the
// record's data) back into the Profile first decoded: for answers cached and
// read again. nil, nil when the record has no usable profile URL.
func ParseProfileRaw(raw []byte) (*enrich.Profile, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, malformed("profile: not a JSON object")
	}
	f, err := decodeData(raw, 0)
	return f.profile, err
}

// bulkItems reads a bulk 200 answer (a JSON array of items) for n requests
// sent, pairing items by metadata: a request without exactly one item
// (missing, duplicated), or whose item does not parse, gets a transient
// error of unknown outcome. A body that is not an array is malformed.
func bulkItems(body []byte, n int) ([]item, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '[' {
		return nil, malformed("bulk: not a JSON array")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		return nil, malformed("bulk: %v", err)
	}
	out := make([]item, n)
	seen := make([]int, n)
	for _, r := range raws {
		var w personWire
		if len(bytes.TrimSpace(r)) == 0 || bytes.TrimSpace(r)[0] != '{' || json.Unmarshal(r, &w) != nil {
			continue // cannot tell which request it answers: that one ends up missing
		}
		j, ok := metadataItem(w.Metadata)
		if !ok || j < 0 || j >= n {
			continue
		}
		if seen[j]++; seen[j] > 1 {
			continue
		}
		out[j] = decodeItem(w)
	}
	for j := range out {
		switch {
		case seen[j] == 0:
			out[j] = item{err: unknownItem("missing_result", "the vendor's answer has no item for this request")}
		case seen[j] > 1:
			out[j] = item{err: unknownItem("duplicate_result", "the vendor's answer has several items for this request")}
		}
	}
	return out, nil
}

// metadataItem is the request number a bulk item's metadata echoes: the
// string sent ("3"), or a number where a vendor turned it into one.
func metadataItem(raw json.RawMessage) (int, bool) {
	var md map[string]json.RawMessage
	if json.Unmarshal(raw, &md) != nil {
		return 0, false
	}
	var s string
	if json.Unmarshal(md[metadataKey], &s) == nil {
		j, err := strconv.Atoi(s)
		return j, err == nil && strconv.Itoa(j) == s
	}
	var j int
	return j, json.Unmarshal(md[metadataKey], &j) == nil
}

// item is one bulk item: a match (billed), a no-match (free), or an error.
type item struct {
	found
	billed bool // a 200: one credit
	err    *enrich.Error
}

func decodeItem(w personWire) item {
	var status int
	if json.Unmarshal(w.Status, &status) != nil {
		return item{err: unknownItem("malformed_result", "an item without a status")}
	}
	switch status {
	case http.StatusOK:
		f, err := decodeMatch(w)
		if err != nil {
			return item{billed: true, err: unknownItem("malformed_result", err.Error())}
		}
		return item{found: f, billed: true}
	case http.StatusNotFound:
		return item{}
	}
	return item{err: itemError(status, w.Error)}
}

// unknownItem is an item whose outcome is unknown: it may have been billed.
func unknownItem(code, msg string) *enrich.Error {
	return &enrich.Error{Class: enrich.ClassTransient, Endpoint: endpointBulk, Code: code, Message: msg, OutcomeUnknown: true}
}

// looseList decodes the non-blank string members of a JSON list, nil for
// anything else (never an error).
type looseList []string

func (l *looseList) UnmarshalJSON(b []byte) error {
	var list []enrich.LooseString
	if len(b) == 0 || b[0] != '[' || json.Unmarshal(b, &list) != nil {
		return nil
	}
	var out []string
	for _, v := range list {
		if strings.TrimSpace(string(v)) != "" {
			out = append(out, string(v))
		}
	}
	*l = out
	return nil
}
