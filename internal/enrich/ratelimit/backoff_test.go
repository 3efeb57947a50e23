package ratelimit

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	const base, maxD = 100 * time.Millisecond, 5 * time.Second
	tests := []struct {
		name    string
		attempt int
		rnd     float64
		want    time.Duration
	}{
		{"zero jitter is zero", 3, 0, 0},
		{"first retry, half", 0, 0.5, 50 * time.Millisecond},
		{"first retry, almost all", 0, 0.999, 99900 * time.Microsecond},
		{"doubles per attempt", 1, 0.5, 100 * time.Millisecond},
		{"doubles again", 2, 0.5, 200 * time.Millisecond},
		{"just under the cap", 5, 1, 3200 * time.Millisecond},
		{"capped", 6, 1, maxD},
		{"capped, jittered", 6, 0.25, maxD / 4},
		{"huge attempt saturates", 1 << 30, 0.5, maxD / 2},
		{"negative attempt counts as 0", -3, 0.5, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Backoff(tt.attempt, base, maxD, func() float64 { return tt.rnd })
			if got != tt.want {
				t.Errorf("Backoff(%d, %s, %s, %v) = %s, want %s", tt.attempt, base, maxD, tt.rnd, got, tt.want)
			}
		})
	}
}

func TestBackoffFullJitterBounds(t *testing.T) {
	t.Parallel()
	const base, maxD = 100 * time.Millisecond, 5 * time.Second
	for attempt := range 12 {
		ceiling := min(maxD, base<<attempt)
		for _, rnd := range []float64{0, 0.1, 0.5, 0.9, 0.999999} {
			got := Backoff(attempt, base, maxD, func() float64 { return rnd })
			if got < 0 || got >= ceiling {
				t.Errorf("Backoff(%d, rnd=%v) = %s, want in [0, %s)", attempt, rnd, got, ceiling)
			}
		}
	}
}
