package enrich

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Class says what the caller should do with a failed call. A no-match is not
// an error and has no class.
type Class int

// The classes of failed calls. Which answer falls in which class is decided
// in one place per vendor: classify in the wire file of each adapter's
// package (seed/wire.go, pdl/wire.go, hunter/wire.go).
const (
	// ClassTransient: 5xx, timeouts, connection resets, malformed answers.
	// Retry with backoff, a bounded number of times.
	ClassTransient Class = iota
	// ClassRateLimited: 429. Back off (honour RetryAfter) and slow every
	// worker sharing the API key.
	ClassRateLimited
	// ClassPermanent: bad input (400, 413, 422, a per-row error). Never retried.
	ClassPermanent
	// ClassUnauthorized: 401, the API key is bad or revoked. Stop the job.
	ClassUnauthorized
	// ClassForbidden: 403, the plan has no API access (code plan_required).
	// Stop the job.
	ClassForbidden
	// ClassOutOfCredits: 402 at a vendor that blocks at zero
	// (Billing.BlocksAtZero): the whole call was refused and nothing billed.
	// No call with this key can succeed until someone buys credits: take
	// the vendor out for the tenant.
	ClassOutOfCredits
	// ClassPending: the vendor took the question but has no answer yet (a
	// verifier's 202 "still checking", its 222 "the mail server did not
	// answer"): nothing billed; ask the same question again later, from the
	// scheduler, not by a worker waiting. RetryAfter, when set, says when.
	ClassPending
	// ClassSuppressed: the vendor says the person asked it to stop
	// processing their data (a 451): store nothing of theirs from this
	// vendor and never ask it about them again. Not retried.
	ClassSuppressed
)

// String is the class's name, as used in logs and stored reasons.
func (c Class) String() string {
	switch c {
	case ClassTransient:
		return "transient"
	case ClassRateLimited:
		return "rate_limited"
	case ClassPermanent:
		return "permanent"
	case ClassUnauthorized:
		return "unauthorized"
	case ClassForbidden:
		return "forbidden"
	case ClassOutOfCredits:
		return "out_of_credits"
	case ClassPending:
		return "pending"
	case ClassSuppressed:
		return "suppressed"
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// Error is a failed call to the vendor, or one failed row of a bulk call.
// Its text never holds the API key.
type Error struct {
	Class    Class
	Endpoint string // "profile", "email", "phone" or "bulk"
	Status   int    // HTTP status, 0 if none (network error, per-row error, refused before the call)
	Code     string // vendor error code, e.g. "invalid_request", "plan_required"; or the client's own ("timeout", "malformed_response"...)
	Message  string
	// RetryAfter is the vendor's Retry-After (seconds or HTTP date) on a 429
	// or 503; 0 when absent.
	RetryAfter time.Duration
	// Charge is set when the answer carried credit headers.
	Charge *Charge
	// RateLimit is set when the answer carried X-RateLimit-* headers.
	RateLimit *RateLimit
	// OutcomeUnknown: the request may have reached the vendor and been billed
	// (a timeout or reset after sending it, a 5xx other than 503, a malformed
	// 2xx answer). Count it as spent, retry with the same Idempotency-Key.
	OutcomeUnknown bool
	// Err is the underlying error, if any (for errors.Is: context.Canceled,
	// context.DeadlineExceeded, ...). Its own text is not part of Error().
	Err error
}

// Error says endpoint, status, code and message; never the API key.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("enrich: vendor ")
	if e.Endpoint != "" {
		b.WriteString(e.Endpoint)
	} else {
		b.WriteString("call")
	}
	b.WriteString(": ")
	if e.Status != 0 {
		fmt.Fprintf(&b, "status %d", e.Status)
	} else {
		b.WriteString("no status")
	}
	if e.Code != "" {
		b.WriteString(", code ")
		b.WriteString(e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	b.WriteString(" (")
	b.WriteString(e.Class.String())
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %s", e.RetryAfter)
	}
	if e.OutcomeUnknown {
		b.WriteString("; outcome unknown, may have been billed")
	}
	b.WriteString(")")
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the call may succeed if made again later: the
// transient and rate-limited classes.
func (e *Error) Retryable() bool {
	return e.Class == ClassTransient || e.Class == ClassRateLimited
}

// StopsKey reports whether no call with this API key can succeed until someone
// acts (401, 403, and 402 at a vendor that blocks at zero): the job should
// stop, or go on without this vendor, with this error as its reason.
func (e *Error) StopsKey() bool {
	return e.Class == ClassUnauthorized || e.Class == ClassForbidden || e.Class == ClassOutOfCredits
}

// AsError finds an [*Error] in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}
