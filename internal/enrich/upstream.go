package enrich

import (
	"errors"
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

// CallError is the *Error of a call the upstream kit could not complete
// (err from [upstream.Caller.Do]): a request that could not be built is
// permanent; a call with no complete answer, or a whole answer too long,
// is transient, of unknown outcome once the request was written.
func CallError(endpoint string, err error) *Error {
	var ue *upstream.Error
	if !errors.As(err, &ue) {
		ue = &upstream.Error{Code: upstream.TransportCode(err), Message: ErrText(err), Err: err}
	}
	e := &Error{Class: ClassTransient, Endpoint: endpoint, Status: ue.Status, Code: ue.Code, Message: ue.Message,
		OutcomeUnknown: ue.Sent, Err: ue.Err}
	if ue.Code == upstream.CodeInvalidRequest {
		e.Class = ClassPermanent
	}
	return e
}

// CallFailed completes the *Error of a call the vendor answered: with what
// its headers said it cost (ErrorCharge) and of its rate limit, of unknown
// outcome when the request was sent twice (ch.Resent: the first send may be
// the one billed), the key redacted.
func CallFailed(e *Error, key string, ch Charge, rl *RateLimit) *Error {
	if ch.Resent {
		e.OutcomeUnknown = true
	}
	e.Charge = ErrorCharge(ch, e)
	e.RateLimit = rl
	return e.Redacted(key)
}

// MalformedError is a 2xx answer whose body does not parse: the vendor did
// the work (and may have billed it, as ch says), its result is lost.
func MalformedError(key, endpoint string, status int, ch Charge, rl *RateLimit, err error) *Error {
	return CallFailed(&Error{Class: ClassTransient, Endpoint: endpoint, Status: status, Code: "malformed_response", Message: ErrText(err),
		OutcomeUnknown: true, Err: err}, key, ch, rl)
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
