package enrich

import (
	"net/http"

	"github.com/enrichq/enrichq/internal/upstream"
)

// The adapters' share of the upstream call kit (internal/upstream): the
// errors every adapter makes alike, the key redacted from each.

// Clip keeps at most n bytes of s's printable text, on one line
// (upstream.Clip).
func Clip(s string, n int) string { return upstream.Clip(s, n) }

// ErrText is err's text without the URL a *url.Error adds, clipped
// (upstream.ErrText).
func ErrText(err error) string { return upstream.ErrText(err) }

// ParseBaseURL checks an adapter's base URL (upstream.ParseBaseURL).
func ParseBaseURL(s, pkg, version string) (string, error) {
	return upstream.ParseBaseURL(s, pkg, version)
}

// NoRedirects returns a copy of hc that follows no redirect (upstream.NoRedirects).
func NoRedirects(hc *http.Client) *http.Client { return upstream.NoRedirects(hc) }

// TransportError is a call that got no (complete) answer: a timeout, a
// reset, a refused connection, a canceled context. Its outcome is unknown
// when the request was written (sent). key is redacted from its text.
func TransportError(key, endpoint string, status int, err error, sent bool) *Error {
	e := &Error{Class: ClassTransient, Endpoint: endpoint, Status: status, Code: upstream.TransportCode(err), Message: ErrText(err),
		OutcomeUnknown: sent, Err: err}
	return e.Redacted(key)
}

// MalformedError is a 2xx answer whose body does not parse: the vendor did
// the work (and may have billed it, as ch says), its result is lost.
func MalformedError(key, endpoint string, status int, ch Charge, rl *RateLimit, err error) *Error {
	e := &Error{Class: ClassTransient, Endpoint: endpoint, Status: status, Code: "malformed_response", Message: ErrText(err),
		OutcomeUnknown: true, RateLimit: rl, Err: err}
	e.Charge = ErrorCharge(ch, e)
	return e.Redacted(key)
}

// ErrorCharge is what an error answer says it cost: nil when it said
// nothing (the reservation is then counted, outcome unknown, or
// released). A call of unknown outcome is settled only by the charge
// header; the balance alone would settle it at 0.
func ErrorCharge(ch Charge, e *Error) *Charge {
	if ch.Reported || (ch.RemainingReported && !e.OutcomeUnknown) {
		return &ch
	}
	return nil
}

// Refused is a call refused before it was made (bad input): permanent, free.
func Refused(endpoint, code, msg string) *Error {
	return &Error{Class: ClassPermanent, Endpoint: endpoint, Code: code, Message: msg}
}

// Redacted is e with key removed from its code and message (the vendor
// may echo it).
func (e *Error) Redacted(key string) *Error {
	e.Code = upstream.Redact(e.Code, key)
	e.Message = upstream.Redact(e.Message, key)
	return e
}
