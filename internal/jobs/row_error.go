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
// database error, nor the vendor's own text (it may speak of the
// operator's account), whose detail is the worker's log's. Of an input the
// vendor refused, its status and error code are kept.
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
		switch code := ve.Code; {
		case ve.Status != 0 && isCodeWord(code):
			return fmt.Sprintf("vendor rejected the input (%d %s)", ve.Status, code)
		case ve.Status != 0:
			return fmt.Sprintf("vendor rejected the input (%d)", ve.Status)
		case isCodeWord(code):
			return "vendor rejected the input (" + code + ")"
		}
		return "vendor rejected the input"
	case ve.Class == enrich.ClassRateLimited && ve.Status != 0:
		return fmt.Sprintf("vendor rate limited (%d)", ve.Status) // 429, or the third vendor's 403
	case ve.Class == enrich.ClassPending:
		return "vendor still checking: asked again later"
	case ve.Class == enrich.ClassRateLimited:
		return "vendor rate limited"
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

// isCodeWord says whether a vendor's error code is a plain word
// (invalid_request), fit to name a class; anything else is its text.
func isCodeWord(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
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
