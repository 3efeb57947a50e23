package ratelimit

import (
	"testing"
	"time"
)

// vendorBucket is a vendor's own limit on the fake clock: rate requests a
// second with a burst, every excess answered 429.
type vendorBucket struct {
	rate, tokens, burst float64
	at                  time.Time
}

func (v *vendorBucket) take(now time.Time) bool {
	v.tokens = min(v.burst, v.tokens+now.Sub(v.at).Seconds()*v.rate)
	v.at = now
	if v.tokens < 1 {
		return false
	}
	v.tokens--
	return true
}

// Four processes' limiters on one key, taking turns on one fake clock,
// against a vendor allowing 20 requests/s (a burst of 4) that answers every
// excess with a 429: together they keep to the limit (under 1% of calls
// answered 429) and use it (120 lookups in about 6 s of the clock). The
// same run on real time, through four workers, is
// internal/jobs' TestFourWorkersShareTheVendorLimit, which prints its
// figures.
func TestFourLimitersShareTheVendorLimit(t *testing.T) {
	t.Parallel()
	const rps, rows = 20, 120
	b := setupFake(t)
	var ls []*Limiter
	for range 4 {
		ls = append(ls, b.newLimiter(t, Options{Rate: rps, Burst: 1}))
	}
	start := b.clock.Now()
	v := &vendorBucket{rate: rps, tokens: 4, burst: 4, at: start}
	calls, throttled, served := 0, 0, 0
	for i := 0; served < rows; i++ {
		if calls > 10*rows {
			t.Fatalf("%d calls, %d served: the limiters never kept to the vendor's limit", calls, served)
		}
		l := ls[i%len(ls)]
		if err := l.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		calls++
		if v.take(b.clock.Now()) {
			served++
			l.Succeeded(t.Context())
			continue
		}
		throttled++
		if err := l.Throttled(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := b.clock.Now().Sub(start)
	share := float64(throttled) / float64(calls)
	t.Logf("4 limiters, vendor limit %d req/s: %d calls, %d answered 429 (%.2f%%), %d served in %s of the clock",
		rps, calls, throttled, share*100, served, elapsed)
	if share >= 0.01 {
		t.Fatalf("%.2f%% of calls answered 429, want under 1%%", share*100)
	}
	if ideal := time.Duration(float64(rows-4) / rps * float64(time.Second)); elapsed < ideal || elapsed > ideal*11/10 {
		t.Errorf("%d lookups in %s of the clock, want from %s to 10%% more (the vendor's pace, used)", rows, elapsed, ideal)
	}
}
