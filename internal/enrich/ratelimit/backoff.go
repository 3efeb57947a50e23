package ratelimit

import (
	"math"
	"time"
)

// Backoff returns the delay before retry number attempt (0 for the first retry) with full jitter:
// rnd() * min(max, base * 2^attempt). rnd must return a value in [0, 1); the result is therefore in
// [0, min(max, base*2^attempt)). A negative attempt counts as 0; base*2^attempt is computed in floating
// point, so a large attempt saturates at max instead of overflowing.
//
// The Lua script behind Limiter.Throttled computes the same formula for the shared cool-down;
// TestThrottledBackoffMatchesBackoff keeps the two equal.
func Backoff(attempt int, base, max time.Duration, rnd func() float64) time.Duration {
	if base <= 0 || max <= 0 {
		return 0
	}
	if attempt < 0 {
		attempt = 0
	}
	ceiling := max
	if grown := float64(base) * math.Exp2(float64(attempt)); grown < float64(max) {
		ceiling = time.Duration(grown)
	}
	return time.Duration(rnd() * float64(ceiling))
}
