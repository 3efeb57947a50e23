package hunter

// This file holds every assumption about the vendor's wire, Hunter's API v2
// as the project's vendor-hunter.md condenses it (summarised in
// docs/vendors.md): paths, parameters, headers, JSON shapes, what each
// status code means (classify), and how an answer maps onto enrich's Email.
// Adapting to the real vendor's exact shapes is a change of this file only.

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

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

// Paths (under the base URL) and their names in errors and logs.
const (
	pathFinder   = "/v2/email-finder"
	pathVerifier = "/v2/email-verifier"
	pathAccount  = "/v2/account"

	endpointFinder   = "email_finder"
	endpointVerifier = "email_verifier"
	endpointAccount  = "account"
)

func endpointOf(s domain.Stage) string {
	if s == domain.StageVerify {
		return endpointVerifier
	}
	return endpointFinder
}

// headerAPIKey carries the key (the vendor also takes an api_key query
// parameter: not used, so that no URL ever holds it).
const headerAPIKey = "X-API-KEY"

// Parameters.
const (
	paramDomain    = "domain"
	paramCompany   = "company" // accepted instead of domain, weaker
	paramFullName  = "full_name"
	paramFirstName = "first_name"
	paramLastName  = "last_name"
	paramEmail     = "email"
)

// finderParams: a two-word name as first_name and last_name (the vendor's
// strongest form), any other as full_name; the domain, else the company.
func finderParams(q enrich.ProfileQuery) url.Values {
	p := url.Values{}
	if f := strings.Fields(q.Name); len(f) == 2 {
		p.Set(paramFirstName, f[0])
		p.Set(paramLastName, f[1])
	} else {
		p.Set(paramFullName, strings.Join(f, " "))
	}
	if d := strings.TrimSpace(q.Domain); d != "" {
		p.Set(paramDomain, d)
	} else {
		p.Set(paramCompany, strings.TrimSpace(q.Company))
	}
	return p
}

// Statuses of this API beyond the usual.
const (
	statusStillChecking = http.StatusAccepted // 202: the verification still runs
	statusNoAnswer      = 222                 // the remote mail server did not answer
	statusSuppressed    = http.StatusUnavailableForLegalReasons
)

// pendingRetry is when a 202 or 222 is worth asking again, unless the
// answer's Retry-After says: a verification takes seconds to minutes.
const pendingRetry = time.Minute

// slowDown is the wait a 403 (rate limit reached) asks when Retry-After says
// none: the tightest window is one second.
const slowDown = time.Second

// classify is the one place that decides what a call's status means: a 200
// to decode (false), a free miss (true), or an *enrich.Error with its class.
func classify(endpoint string, status int, h http.Header, body []byte) (miss bool, _ *enrich.Error) {
	switch {
	case status == http.StatusOK:
		return false, nil
	case status == http.StatusNotFound && endpoint == endpointFinder:
		return true, nil // no email found: free (assumed: also as a 404)
	}
	code, msg := errorBody(body)
	e := &enrich.Error{Endpoint: endpoint, Status: status, Code: code, Message: msg}
	switch {
	case (status == statusStillChecking || status == statusNoAnswer) && endpoint == endpointVerifier:
		e.Class = enrich.ClassPending // not billed until it answers
		e.RetryAfter = retryAfter(h, pendingRetry)
	case status == http.StatusUnauthorized:
		e.Class = enrich.ClassUnauthorized
	case status == http.StatusForbidden:
		e.Class = enrich.ClassRateLimited // "rate limit reached": slow down and retry
		e.RetryAfter = retryAfter(h, slowDown)
	case status == http.StatusTooManyRequests:
		e.Class = enrich.ClassOutOfCredits // "usage limit reached": the month's quota is spent, nothing billed
	case status == statusSuppressed:
		e.Class = enrich.ClassSuppressed
	case status == http.StatusRequestTimeout:
		e.Class = enrich.ClassTransient
	case status >= 400 && status <= 499: // 400 wrong_params, and the rest
		e.Class = enrich.ClassPermanent
	case status == http.StatusServiceUnavailable:
		e.Class = enrich.ClassTransient // refused, not processed
		e.RetryAfter = retryAfter(h, 0)
	case status >= 500: // the work may have been done
		e.Class = enrich.ClassTransient
		e.OutcomeUnknown = true
	default: // 1xx, another 2xx, 3xx: not an answer of this API
		e.Class = enrich.ClassTransient
		e.OutcomeUnknown = status >= 200 && status <= 299
	}
	if e.Code == "" {
		e.Code = strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_"))
		if e.Code == "" {
			e.Code = "status_" + strconv.Itoa(status)
		}
	}
	return false, e
}

// retryAfter is Retry-After in seconds when sent, else def.
func retryAfter(h http.Header, def time.Duration) time.Duration {
	if secs, err := strconv.ParseInt(strings.TrimSpace(h.Get("Retry-After")), 10, 64); err == nil && secs > 0 {
		return time.Duration(min(secs, int64(math.MaxInt64/time.Second))) * time.Second
	}
	return def
}

// errorBody reads {"errors": [{"id": "...", "code": 403, "details": "..."}]}:
// the first error's id and details; another shape gives no code and a short
// excerpt as the message.
func errorBody(body []byte) (code, msg string) {
	var w struct {
		Errors []struct {
			ID      enrich.LooseString `json:"id"`
			Details enrich.LooseString `json:"details"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &w) == nil && len(w.Errors) > 0 {
		return enrich.Clip(string(w.Errors[0].ID), 100), enrich.Clip(string(w.Errors[0].Details), 300)
	}
	return "", enrich.Clip(string(body), 200)
}

// errMalformed wraps every decoding failure of a 200 body.
var errMalformed = errors.New("malformed response")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// dataOf is the "data" object of a 200 answer.
func dataOf(body []byte) (json.RawMessage, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return nil, malformed("not a JSON object")
	}
	var w struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, malformed("%v", err)
	}
	d := bytes.TrimSpace(w.Data)
	if len(d) == 0 || d[0] != '{' {
		return nil, malformed("no data object")
	}
	return d, nil
}

// finderWire are the fields of an Email Finder answer enrichq reads.
type finderWire struct {
	Email        enrich.LooseString `json:"email"`
	Company      enrich.LooseString `json:"company"`
	Score        json.RawMessage    `json:"score"`
	AcceptAll    json.RawMessage    `json:"accept_all"`
	Verification struct {
		Status enrich.LooseString `json:"status"`
	} `json:"verification"`
}

// emailRaw is Email.Raw: the shape enrich.ParseEmailRaw reads back, plus
// what this vendor said of the address (the domain a catch-all, its own
// last verification, its verifier's verdict).
type emailRaw struct {
	Email      string  `json:"email"`
	Confidence float64 `json:"confidence"`
	Verified   bool    `json:"verified"`
	Status     string  `json:"status,omitempty"`
	AcceptAll  bool    `json:"accept_all,omitempty"`
	Result     string  `json:"result,omitempty"`
}

// decodeFinder reads a 200 of the finder: an email (confidence score/100;
// verified when the vendor's own last check said valid) and the company
// the vendor names, or nil when data.email is null or blank (a free miss).
// An email that is not an address is malformed.
func decodeFinder(body []byte) (*enrich.Email, string, error) {
	d, err := dataOf(body)
	if err != nil {
		return nil, "", err
	}
	var f finderWire
	if err := json.Unmarshal(d, &f); err != nil {
		return nil, "", malformed("data: %v", err)
	}
	addr := strings.TrimSpace(string(f.Email))
	if addr == "" {
		return nil, "", nil
	}
	if enrich.AddressHost(addr) == "" {
		return nil, "", malformed("email %q is not an address", enrich.Clip(addr, 80))
	}
	r := emailRaw{Email: addr, Confidence: score(f.Score), Verified: string(f.Verification.Status) == string(enrich.StatusValid)}
	_ = json.Unmarshal(f.AcceptAll, &r.AcceptAll) // absent or not a bool: false
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, "", err
	}
	return &enrich.Email{Address: addr, Confidence: r.Confidence, Verified: r.Verified, Raw: raw}, strings.TrimSpace(string(f.Company)), nil
}

// rightPerson is the rule of the right person (enrich.WorksAt) for an
// address the finder found for q. Asked at a domain, the address must be
// at it (or a subdomain); asked at a company, its domain or the company
// the vendor names must be that company. An address elsewhere is a
// namesake's or an old employer's: billed, never delivered.
func rightPerson(q enrich.ProfileQuery, addr, company string) bool {
	host := enrich.AddressHost(addr)
	if strings.TrimSpace(q.Domain) != "" {
		return enrich.WorksAt(enrich.ProfileQuery{Domain: q.Domain}, enrich.Employer{Websites: []string{host}})
	}
	return enrich.WorksAt(q, enrich.Employer{Websites: []string{host}, Names: []string{company}})
}

// verifierWire are the fields of an Email Verifier answer enrichq reads.
type verifierWire struct {
	Status enrich.LooseString `json:"status"`
	Result enrich.LooseString `json:"result"`
	Score  json.RawMessage    `json:"score"`
	Email  enrich.LooseString `json:"email"`
}

// statuses are the verdicts the verifier gives.
var statuses = map[string]enrich.EmailStatus{
	"valid": enrich.StatusValid, "invalid": enrich.StatusInvalid, "accept_all": enrich.StatusAcceptAll,
	"webmail": enrich.StatusWebmail, "disposable": enrich.StatusDisposable, "unknown": enrich.StatusUnknown,
}

// billedStatus: a verification is billed, except webmail, disposable and
// unknown (the contract).
func billedStatus(s enrich.EmailStatus) bool {
	return s != enrich.StatusWebmail && s != enrich.StatusDisposable && s != enrich.StatusUnknown
}

// decodeVerifier reads a 200 of the verifier for address asked: its
// verdict. A status it does not know is malformed (billed or not, it cannot
// say), and so is an answer about another address.
func decodeVerifier(body []byte, asked string) (*enrich.Email, error) {
	d, err := dataOf(body)
	if err != nil {
		return nil, err
	}
	var w verifierWire
	if err := json.Unmarshal(d, &w); err != nil {
		return nil, malformed("data: %v", err)
	}
	st, ok := statuses[strings.ToLower(strings.TrimSpace(string(w.Status)))]
	if !ok {
		return nil, malformed("status %q is not a verdict", enrich.Clip(string(w.Status), 40))
	}
	addr := strings.TrimSpace(string(w.Email))
	if addr == "" {
		addr = asked
	} else if !strings.EqualFold(addr, strings.TrimSpace(asked)) {
		return nil, malformed("the verdict is about another address")
	}
	r := emailRaw{Email: addr, Confidence: score(w.Score), Verified: st == enrich.StatusValid, Status: string(st), Result: string(w.Result)}
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return &enrich.Email{Address: addr, Confidence: r.Confidence, Verified: r.Verified, Status: st, Raw: raw}, nil
}

// score is a 0-100 score as a confidence from 0 to 1 (0 when absent).
func score(raw json.RawMessage) float64 {
	var s float64
	if json.Unmarshal(raw, &s) != nil || math.IsNaN(s) {
		return 0
	}
	return math.Round(min(1, max(0, s/100))*100) / 100
}

// Usage is GET /v2/account's request counters: the key's two quotas.
type Usage struct {
	Searches      Quota `json:"searches"`
	Verifications Quota `json:"verifications"`
}

// Quota is one quota's counters this period.
type Quota struct {
	Used      int64 `json:"used"`
	Available int64 `json:"available"`
}

// decodeAccount reads {"data": {"requests": {"searches": {"used",
// "available"}, "verifications": {...}}}}; a negative counter is malformed.
func decodeAccount(body []byte) (Usage, error) {
	d, err := dataOf(body)
	if err != nil {
		return Usage{}, err
	}
	var w struct {
		Requests *Usage `json:"requests"`
	}
	if err := json.Unmarshal(d, &w); err != nil || w.Requests == nil {
		return Usage{}, malformed("account: no request counters")
	}
	for _, q := range []Quota{w.Requests.Searches, w.Requests.Verifications} {
		if q.Used < 0 || q.Available < 0 {
			return Usage{}, malformed("account: a negative counter")
		}
	}
	return *w.Requests, nil
}
