package jobs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"unicode/utf8"

	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
)

// rowError names the class of a row's failure as its tenant reads it (the
// row's last_error and reason, shown in results): never a raw transport or
// database error, whose detail is the worker's log's. The vendor's own word
// on an input it refused is kept: it says what to fix.
func rowError(err error) string {
	var (
		se     *storeError
		notYet *ratelimit.NotYetError
		ve     *enrich.Error
		netErr net.Error
	)
	switch {
	case errors.As(err, &se):
		return "store unavailable"
	case errors.As(err, &notYet):
		if notYet.CoolDown {
			return "vendor rate limited: waiting out its cool-down"
		}
		return "vendor rate limit: waiting for a slot"
	case errors.As(err, &ve):
		return vendorError(ve)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "vendor timed out"
	}
	return "unexpected error"
}

func vendorError(ve *enrich.Error) string {
	var netErr net.Error
	switch {
	case ve.Class == enrich.ClassPermanent:
		msg := "vendor rejected the input"
		if ve.Status != 0 {
			msg = fmt.Sprintf("vendor rejected the input (%d)", ve.Status)
		}
		if ve.Message != "" {
			msg += ": " + clip(ve.Message, 200)
		}
		return msg
	case ve.Class == enrich.ClassRateLimited:
		return "vendor rate limited (429)"
	case ve.Class == enrich.ClassUnauthorized:
		return "vendor refused the API key (401)"
	case ve.Class == enrich.ClassForbidden:
		return "vendor refused access (403)"
	case errors.Is(ve, context.DeadlineExceeded), ve.Code == "timeout", errors.As(ve.Err, &netErr) && netErr.Timeout():
		return "vendor timed out"
	case ve.Code == "malformed_response":
		return "vendor answer unreadable"
	case ve.Code == "response_too_large":
		return "vendor answer too large"
	case ve.Status >= 500:
		return fmt.Sprintf("vendor unavailable (%d)", ve.Status)
	case ve.Status != 0:
		return fmt.Sprintf("vendor error (%d)", ve.Status)
	case ve.Code == "network_error":
		return "vendor unreachable"
	}
	return "vendor error"
}

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
