package pdl

// What a PDL answer's headers say (part of the wire, beside wire.go): the
// credits a call cost and those left, its rate-limit windows (per-window
// dicts, as PDL's clients read them) and when a spent window resets.

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/enrich"
)

// retryAfter is the wait a 429 or 503 asks for: until X-RateLimit-Reset
// (the window's end, a UTC time), else Retry-After in seconds; 0 when
// neither says a wait in the future.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if t, ok := parseTime(h.Get(headerRateReset)); ok {
		if d := t.Sub(now); d > 0 {
			return d
		}
		return 0
	}
	if secs, err := strconv.ParseInt(strings.TrimSpace(h.Get(headerRetryAfter)), 10, 64); err == nil && secs > 0 {
		return time.Duration(min(secs, int64(math.MaxInt64/time.Second))) * time.Second
	}
	return 0
}

// resetLayouts are the forms of X-RateLimit-Reset read: RFC 3339, an HTTP
// date, and "2006-01-02 15:04:05" with or without a zone (UTC when none).
var resetLayouts = []string{time.RFC3339Nano, http.TimeFormat, time.RFC1123, "2006-01-02 15:04:05 MST", "2006-01-02 15:04:05 -0700", "2006-01-02 15:04:05", "2006-01-02T15:04:05"}

// parseTime reads a UTC time in one of resetLayouts, or as Unix seconds.
func parseTime(v string) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 1e9 { // not a Unix time: a count of seconds is not what the contract says
			return time.Time{}, false
		}
		return time.Unix(n, 0).UTC(), true
	}
	for _, l := range resetLayouts {
		if t, err := time.ParseInLocation(l, v, time.UTC); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// parseCharge reads X-Call-Credits-Spent and X-TotalLimit-Remaining, and
// the balance's split into purchased and overage credits when both are
// sent; a value that is not a whole number (or a negative charge) counts
// as absent.
func parseCharge(h http.Header) enrich.Charge {
	var c enrich.Charge
	if v, err := strconv.ParseInt(strings.TrimSpace(h.Get(headerCreditsSpent)), 10, 64); err == nil && v >= 0 {
		c.Credits, c.Reported = v, true
	}
	if v, err := strconv.ParseInt(strings.TrimSpace(h.Get(headerRemaining)), 10, 64); err == nil {
		c.Remaining, c.RemainingReported = v, true
	}
	p, perr := strconv.ParseInt(strings.TrimSpace(h.Get(headerPurchased)), 10, 64)
	o, oerr := strconv.ParseInt(strings.TrimSpace(h.Get(headerOverages)), 10, 64)
	if perr == nil && oerr == nil {
		c.Overage = &enrich.Overage{PurchasedRemaining: p, OveragesRemaining: o}
	}
	return c
}

// rateWindows are the windows of the rate-limit dicts, shortest first: the
// limiter paces the shortest one the vendor counts. windowSeconds are their
// lengths (a month's varies: 0, not a fixed window to wait out).
var (
	rateWindows   = []string{"second", "minute", "hour", "day", "month"}
	windowSeconds = map[string]int64{"second": 1, "minute": 60, "hour": 3600, "day": 86400}
)

// rateFigures reads X-RateLimit-Remaining or -Limit: a whole number, or the
// vendor's per-window dict as its clients see it, a Python repr such as
// {'minute': 1200, 'day': None, 'month': None} (JSON accepted too). It
// returns each window's figure (a bare number is the minute's).
func rateFigures(v string) map[string]int64 {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return nil
		}
		return map[string]int64{"minute": n}
	}
	if !strings.HasPrefix(v, "{") || len(v) > 1000 {
		return nil
	}
	js := strings.NewReplacer("'", `"`, "None", "null", "True", "true", "False", "false").Replace(v)
	var m map[string]*float64
	if json.Unmarshal([]byte(js), &m) != nil {
		return nil
	}
	out := map[string]int64{}
	for k, n := range m {
		if n != nil && *n >= 0 && *n <= math.MaxInt32 {
			out[strings.ToLower(k)] = int64(*n)
		}
	}
	return out
}

// parseRateLimit reads X-RateLimit-*: Remaining and Limit of the shortest
// window both (or either) count, Reset as a UTC time turned into seconds
// from now. nil when none is there.
func parseRateLimit(h http.Header, now time.Time) *enrich.RateLimit {
	rl := enrich.RateLimit{Limit: -1, Remaining: -1, ResetIn: -1}
	found := false
	limits, remains := rateFigures(h.Get(headerRateLimit)), rateFigures(h.Get(headerRateRemain))
	for _, w := range rateWindows {
		l, lok := limits[w]
		r, rok := remains[w]
		if !lok && !rok {
			continue
		}
		if lok {
			rl.Limit = l
		}
		if rok {
			rl.Remaining = r
		}
		rl.Window, found = windowSeconds[w], true
		break
	}
	if t, ok := parseTime(h.Get(headerRateReset)); ok {
		rl.ResetIn, found = max(0, int64(math.Ceil(t.Sub(now).Seconds()))), true
	}
	if !found {
		return nil
	}
	return &rl
}
