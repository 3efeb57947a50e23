package seed

// This file holds every assumption about the vendor's wire format
// (/work/shared/vendor-api.md, section 1): paths, parameters, headers, JSON
// shapes, and what each status code means (classify). Adapting the client to
// a real vendor's exact shapes is a change of this file only.

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

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
func profileParams(q enrich.ProfileQuery) url.Values {
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
func wireRow(q enrich.ProfileQuery) map[string]string {
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

func bulkBody(rows []enrich.ProfileQuery, include []domain.Stage) ([]byte, error) {
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
func classify(endpoint string, status int, h http.Header, body []byte, now time.Time) (answer, *enrich.Error) {
	if status >= 200 && status <= 299 {
		return answerBody, nil
	}
	if status == http.StatusNotFound && endpoint != endpointBulk {
		return answerNoMatch, nil // no match (the vendor's status for it is not given)
	}
	code, msg := errorBody(body)
	e := &enrich.Error{Endpoint: endpoint, Status: status, Code: code, Message: msg}
	switch {
	case status == http.StatusTooManyRequests:
		e.Class = enrich.ClassRateLimited
		e.RetryAfter = parseRetryAfter(h.Get(headerRetryAfter), now)
	case status == http.StatusUnauthorized:
		e.Class = enrich.ClassUnauthorized
	case status == http.StatusForbidden:
		e.Class = enrich.ClassForbidden // code "plan_required": the plan has no API access
	case status == http.StatusRequestTimeout, // the vendor gave up reading the request
		status == http.StatusConflict, // a request with the same Idempotency-Key is in progress
		status == http.StatusTooEarly:
		e.Class = enrich.ClassTransient
	case status == http.StatusNotFound: // on /v1/bulk: the endpoint is not there, not a no-match
		e.Class = enrich.ClassPermanent
	case status >= 400 && status <= 499: // 400, 413, 422 and the rest: bad input
		e.Class = enrich.ClassPermanent
	case status == http.StatusServiceUnavailable:
		e.Class = enrich.ClassTransient // refused, not processed
		e.RetryAfter = parseRetryAfter(h.Get(headerRetryAfter), now)
	case status >= 500:
		e.Class = enrich.ClassTransient
		e.OutcomeUnknown = true // a 500, 502 or 504 may come after the work was done
		e.RetryAfter = parseRetryAfter(h.Get(headerRetryAfter), now)
	default: // 1xx, 3xx: not an answer of this API
		e.Class = enrich.ClassTransient
	}
	if e.Code == "" {
		e.Code = strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_"))
	}
	return 0, e
}

// rowErrorClass is the class of a per-row error of /v1/bulk, by its code:
// bad input is permanent for that row; the vendor's own trouble is transient.
func rowErrorClass(code string) enrich.Class {
	switch code {
	case "rate_limited", "too_many_requests":
		return enrich.ClassRateLimited
	case "internal_error", "internal", "unavailable", "service_unavailable", "timeout", "upstream_error":
		return enrich.ClassTransient
	}
	return enrich.ClassPermanent
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
		return enrich.Clip(looseText(w.Error.Code), 100), enrich.Clip(looseText(w.Error.Message), 300)
	}
	return "", enrich.Clip(string(body), 200)
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
func parseCharge(h http.Header) enrich.Charge {
	var c enrich.Charge
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
func parseRateLimit(h http.Header) *enrich.RateLimit {
	rl := enrich.RateLimit{Limit: -1, Remaining: -1, ResetIn: -1}
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
