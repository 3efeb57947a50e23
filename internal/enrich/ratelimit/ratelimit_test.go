package ratelimit

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// These tests run on fake time: miniredis's TIME and TTLs follow the same fake clock as the
// limiters' Now and Sleep, so no test waits for real time to pass.

func constRand(v float64) func() float64 { return func() float64 { return v } }

// seqRand returns vs in turn, then the last one forever.
func seqRand(vs ...float64) func() float64 {
	i := 0
	return func() float64 {
		v := vs[min(i, len(vs)-1)]
		i++
		return v
	}
}

// coolDownLeft asks a probe limiter how long the shared cool-down still lasts (0: none). The
// probe has a 1 ns MaxWait, no jitter and a burst large enough that its own pacer never delays.
func coolDownLeft(t *testing.T, probe *Limiter) time.Duration {
	t.Helper()
	err := probe.Wait(t.Context())
	if err == nil {
		return 0
	}
	var notYet *NotYetError
	if !errors.As(err, &notYet) || !notYet.CoolDown {
		t.Fatalf("probe Wait: %v, want nil or a cool-down *NotYetError", err)
	}
	return notYet.RetryIn
}

func newProbe(t *testing.T, b *fakeBundle, rate float64) *Limiter {
	return b.newLimiter(t, Options{Rate: rate, Burst: 1000, MaxWait: time.Nanosecond})
}

func near(got, want, tolerance time.Duration) bool { return (got - want).Abs() <= tolerance }

func rateOf(t *testing.T, l *Limiter) float64 {
	t.Helper()
	r, err := l.Rate(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewValidatesAndDefaults(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	bad := []Options{
		{Rate: 10},           // no Key
		{Key: "k"},           // no Rate
		{Key: "k", Rate: -1}, // negative Rate
		{Key: "k", Rate: math.Inf(1)},
		{Key: "k", Rate: 10, Burst: -1},
		{Key: "k", Rate: 10, MinRate: 11},
		{Key: "k", Rate: 10, MinRate: -1},
		{Key: "k", Rate: 10, BaseBackoff: time.Minute, MaxBackoff: time.Second},
		{Key: "k", Rate: 10, MaxWait: -1},
		{Key: "k", Rate: 10, MaxRetryAfter: -1},
	}
	for _, o := range bad {
		if _, err := New(b.rdb, o); err == nil {
			t.Errorf("New(%+v): no error", o)
		}
	}
	if _, err := New(nil, Options{Key: "k", Rate: 1}); err == nil {
		t.Error("New(nil client): no error")
	}
	l, err := New(b.rdb, Options{Key: "k", Rate: 50})
	if err != nil {
		t.Fatal(err)
	}
	if l.opts.Burst != 5 || l.opts.MinRate != 2.5 || l.opts.BaseBackoff != 500*time.Millisecond || l.opts.MaxBackoff != 30*time.Second {
		t.Errorf("defaults: Burst %d, MinRate %v, BaseBackoff %s, MaxBackoff %s", l.opts.Burst, l.opts.MinRate, l.opts.BaseBackoff, l.opts.MaxBackoff)
	}
	if l.opts.MaxRetryAfter != DefaultMaxRetryAfter || DefaultMaxRetryAfter != 5*time.Minute {
		t.Errorf("default MaxRetryAfter %s, want 5m", l.opts.MaxRetryAfter)
	}
	if l, _ := New(b.rdb, Options{Key: "k", Rate: 0.5}); l.opts.Burst != 1 {
		t.Errorf("Burst for Rate 0.5 = %d, want 1", l.opts.Burst)
	}
}

func TestKeyPrefix(t *testing.T) {
	t.Parallel()
	k := KeyPrefix("sk_live_secret")
	if k != KeyPrefix("sk_live_secret") || k == KeyPrefix("sk_live_other") {
		t.Errorf("KeyPrefix is not a function of the API key: %q", k)
	}
	if !strings.HasPrefix(k, "enrichq:rl:") || len(k) != len("enrichq:rl:")+12 || strings.Contains(k, "secret") {
		t.Errorf("KeyPrefix = %q, want enrichq:rl: and 12 hex digits", k)
	}
}

func TestWaitPacesAtRate(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	l := b.newLimiter(t, Options{Rate: 10, Burst: 2})
	start := b.clock.Now()
	for i := range 10 {
		if err := l.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		// The burst of 2 goes at once, then one every 100 ms.
		want := time.Duration(max(0, i-1)) * 100 * time.Millisecond
		if got := b.clock.Now().Sub(start); !near(got, want, 2*time.Microsecond) {
			t.Fatalf("grant %d at +%s, want +%s", i, got, want)
		}
	}
}

func TestWaitNWeighs(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	l := b.newLimiter(t, Options{Rate: 10, Burst: 5})
	start := b.clock.Now()
	for range 2 {
		if err := l.WaitN(t.Context(), 5); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.clock.Now().Sub(start); !near(got, 500*time.Millisecond, 2*time.Microsecond) {
		t.Errorf("two WaitN(5) at 10/s with burst 5 took %s, want 500ms", got)
	}
	for _, n := range []int{0, 6} {
		if err := l.WaitN(t.Context(), n); err == nil {
			t.Errorf("WaitN(%d) with Burst 5: no error", n)
		}
	}
}

func TestRetryAfterCoolsDownEveryLimiterOnTheKey(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	a := b.newLimiter(t, Options{Rate: 10, Burst: 1})
	c := b.newLimiter(t, Options{Rate: 10, Burst: 1})
	capped := b.newLimiter(t, Options{Rate: 10, Burst: 1, MaxWait: time.Second})
	start := b.clock.Now()

	if err := a.Throttled(t.Context(), 2*time.Second); err != nil {
		t.Fatal(err)
	}

	// A limiter that may not wait that long is told when to come back.
	b.clock.Advance(300 * time.Millisecond)
	err := capped.Wait(t.Context())
	var notYet *NotYetError
	if !errors.As(err, &notYet) || !notYet.CoolDown || !near(notYet.RetryIn, 1700*time.Millisecond, time.Microsecond) {
		t.Fatalf("capped Wait during cool-down: %v, want *NotYetError{RetryIn: 1.7s, CoolDown: true}", err)
	}
	if s := b.clock.Slept(); len(s) != 0 {
		t.Fatalf("capped Wait slept %v", s)
	}

	// Another process, not the one told, waits until the end of the cool-down, then goes.
	if err := c.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := b.clock.Now().Sub(start); !near(got, 2*time.Second, time.Microsecond) {
		t.Errorf("first Wait after Retry-After 2s granted at +%s, want +2s", got)
	}
	// The GCRA restarts empty at the new rate (7/s): the next grant is one interval later, no burst.
	if err := a.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := b.clock.Now().Sub(start), 2*time.Second+time.Second/7; !near(got, want, 2*time.Microsecond) {
		t.Errorf("second Wait after the cool-down granted at +%s, want +%s", got, want)
	}
}

// A Retry-After of a year cools every worker on the key down for MaxRetryAfter, not a year.
func TestRetryAfterIsCapped(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	a := b.newLimiter(t, Options{Rate: 10, Burst: 1})
	c := b.newLimiter(t, Options{Rate: 10, Burst: 1})
	probe := newProbe(t, b, 10)
	start := b.clock.Now()
	if err := a.Throttled(t.Context(), 365*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if d := coolDownLeft(t, probe); !near(d, DefaultMaxRetryAfter, time.Microsecond) {
		t.Fatalf("cool-down after a Retry-After of a year = %s, want the cap %s", d, DefaultMaxRetryAfter)
	}
	if err := c.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := b.clock.Now().Sub(start); !near(got, DefaultMaxRetryAfter, time.Microsecond) {
		t.Errorf("another worker's first grant at +%s, want +%s", got, DefaultMaxRetryAfter)
	}
	// A later 429 of the episode with another long Retry-After extends nothing past the cap.
	own := b.newLimiter(t, Options{Rate: 10, Burst: 1, MaxRetryAfter: time.Minute})
	b.clock.Advance(time.Second)
	if err := own.Throttled(t.Context(), 100*365*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if d := coolDownLeft(t, probe); d > time.Minute+time.Microsecond {
		t.Errorf("cool-down with MaxRetryAfter 1m = %s, want at most 1m", d)
	}
}

func TestCoolDownEndsWithoutBurst(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	l := b.newLimiter(t, Options{Rate: 10, Burst: 5})
	start := b.clock.Now()
	if err := l.Throttled(t.Context(), time.Second); err != nil {
		t.Fatal(err)
	}
	// The bucket was full; after the cool-down the key resumes at the cut rate, 7/s, one at a
	// time, rather than with a burst of 5 that would likely meet another 429.
	for i := range 4 {
		if err := l.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		want := time.Second + time.Duration(i)*time.Second/7
		if got := b.clock.Now().Sub(start); !near(got, want, 3*time.Microsecond) {
			t.Fatalf("grant %d after the cool-down at +%s, want +%s", i, got, want)
		}
	}
}

func TestThrottledBackoffMatchesBackoff(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	const base, maxD = 100 * time.Millisecond, 2 * time.Second
	rnds := []float64{0.5, 0.9, 0.3, 0.75, 0.5, 0.99, 0.5, 0.1}
	thr := b.newLimiter(t, Options{Rate: 10, BaseBackoff: base, MaxBackoff: maxD, Rand: seqRand(rnds...)})
	probe := newProbe(t, b, 10)
	for i, rnd := range rnds {
		if err := thr.Throttled(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		want := Backoff(i, base, maxD, constRand(rnd))
		got := coolDownLeft(t, probe)
		if !near(got, want, time.Microsecond) {
			t.Errorf("429 #%d without Retry-After (rnd %v): cool-down %s, want Backoff(%d) = %s", i+1, rnd, got, i, want)
		}
		// Let the episode end so that the next 429 counts as consecutive.
		b.clock.Advance(max(got, base))
	}
}

func TestBackoffGrowsWithConsecutive429s(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	thr := b.newLimiter(t, Options{Rate: 10, BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Rand: constRand(0.5)})
	probe := newProbe(t, b, 10)
	var got []time.Duration
	for range 7 {
		if err := thr.Throttled(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		d := coolDownLeft(t, probe)
		got = append(got, d)
		b.clock.Advance(max(d, 100*time.Millisecond))
	}
	want := []time.Duration{50, 100, 200, 400, 500, 500, 500}
	for i := range want {
		if !near(got[i], want[i]*time.Millisecond, time.Microsecond) {
			t.Fatalf("cool-downs %v, want %v ms (doubling, capped at MaxBackoff/2 with rnd 0.5)", got, want)
		}
	}
}

func TestManyThrottledInOneEpisodeCountOnce(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	opts := Options{Rate: 100, BaseBackoff: time.Second, Rand: constRand(0.5)}
	var workers []*Limiter
	for range 5 {
		workers = append(workers, b.newLimiter(t, opts))
	}
	probe := newProbe(t, b, 100)
	// Five processes see 429s for requests that were in flight together.
	for _, w := range workers {
		if err := w.Throttled(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(20 * time.Millisecond)
	}
	if r := rateOf(t, probe); r != 70 {
		t.Errorf("rate after one episode of 5 429s = %v, want 70 (cut once)", r)
	}
	// One strike: the first one set a cool-down of 0.5 s, the others did not lengthen it.
	if d := coolDownLeft(t, probe); !near(d, 400*time.Millisecond, time.Microsecond) {
		t.Errorf("cool-down left = %s, want 400ms", d)
	}
	// A later Retry-After in the same episode extends the cool-down, without another cut.
	if err := workers[0].Throttled(t.Context(), 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := coolDownLeft(t, probe); !near(d, 3*time.Second, time.Microsecond) {
		t.Errorf("cool-down after Retry-After 3s = %s, want 3s", d)
	}
	if r := rateOf(t, probe); r != 70 {
		t.Errorf("rate = %v, want still 70", r)
	}
	// A success inside the extended cool-down is a reply to a request sent before it: stale.
	b.clock.Advance(time.Second)
	workers[2].Succeeded(t.Context())
	if r := rateOf(t, probe); r != 70 {
		t.Errorf("rate after a success inside the extended cool-down = %v, want still 70", r)
	}
	// After the episode, the next 429 counts: second strike, second cut.
	b.clock.Advance(2 * time.Second)
	if err := workers[1].Throttled(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if d := coolDownLeft(t, probe); !near(d, time.Second, time.Microsecond) {
		t.Errorf("cool-down of the second strike = %s, want 1s (0.5 × 2 × base)", d)
	}
	if r := rateOf(t, probe); math.Abs(r-49) > 1e-9 {
		t.Errorf("rate after the second episode = %v, want 49", r)
	}
}

func TestRateAIMD(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	const conf = 100.0
	l := b.newLimiter(t, Options{Rate: conf, BaseBackoff: 100 * time.Millisecond})
	if r := rateOf(t, l); r != conf {
		t.Fatalf("initial rate %v, want %v", r, conf)
	}
	// Multiplicative decrease down to MinRate (Rate/20 = 5), never below.
	want := conf
	for range 12 {
		if err := l.Throttled(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		want = max(conf/20, want*0.7)
		if r := rateOf(t, l); math.Abs(r-want) > 1e-9 || r < conf/20 {
			t.Fatalf("rate after a 429 = %v, want %v", r, want)
		}
		b.clock.Advance(100 * time.Millisecond)
	}
	// Additive increase: 5 % of Rate per second of success, up to Rate and never above.
	for i := range 25 {
		b.clock.Advance(time.Second)
		l.Succeeded(t.Context())
		want = min(conf, want+5)
		if r := rateOf(t, l); math.Abs(r-want) > 1e-9 || r > conf {
			t.Fatalf("rate after %d s of success = %v, want %v", i+1, r, want)
		}
	}
	if exists := b.mr.HGet(b.key+":state", "rate"); exists != "" {
		t.Errorf("rate field %q left behind at the configured rate", exists)
	}
}

func TestIncreaseFollowsTimeNotCalls(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	opts := Options{Rate: 100, BaseBackoff: 100 * time.Millisecond}
	procs := []*Limiter{b.newLimiter(t, opts), b.newLimiter(t, opts), b.newLimiter(t, opts)}
	if err := procs[0].Throttled(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	// Three processes report successes, many per process, for 3 s: the rate gains 3 × 5 %.
	for range 301 {
		for _, p := range procs {
			p.Succeeded(t.Context())
		}
		b.clock.Advance(10 * time.Millisecond)
	}
	if r := rateOf(t, procs[0]); math.Abs(r-85) > 1e-6 {
		t.Errorf("rate after 3 s of success from 3 processes = %v, want 70 + 15 = 85", r)
	}
}

func TestSuccessDuringCoolDownIsStale(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	l := b.newLimiter(t, Options{Rate: 100, BaseBackoff: time.Second, Rand: constRand(0.5)})
	probe := newProbe(t, b, 100)
	if err := l.Throttled(t.Context(), 0); err != nil { // strike 1: 0.5 s
		t.Fatal(err)
	}
	// A reply to a request sent before the 429 neither raises the rate nor resets the strikes.
	b.clock.Advance(200 * time.Millisecond)
	l.Succeeded(t.Context())
	if r := rateOf(t, l); r != 70 {
		t.Errorf("rate after a success during the cool-down = %v, want 70", r)
	}
	b.clock.Advance(800 * time.Millisecond) // the episode (1 s, BaseBackoff) ends
	if err := l.Throttled(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if d := coolDownLeft(t, probe); !near(d, time.Second, time.Microsecond) {
		t.Fatalf("cool-down of strike 2 = %s, want 1s", d)
	}
	// A success after the cool-down resets the consecutive count: the next 429 is strike 1 again.
	b.clock.Advance(time.Second)
	l.Succeeded(t.Context())
	if err := l.Throttled(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if d := coolDownLeft(t, probe); !near(d, 500*time.Millisecond, time.Microsecond) {
		t.Errorf("cool-down after a success and a new 429 = %s, want 500ms (strike 1)", d)
	}
}

func TestSucceededIsFreeAtFullRate(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	l := b.newLimiter(t, Options{Rate: 10})
	b.mr.Close() // any Redis call would now fail and log
	var logged strings.Builder
	l.opts.Logger = newTextLogger(&logged)
	l.Succeeded(t.Context())
	if logged.Len() != 0 {
		t.Errorf("Succeeded at full rate called Redis: %s", logged.String())
	}
}

func TestWaitReturnsContextError(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	l := b.newLimiter(t, Options{Rate: 10})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on a cancelled context: %v", err)
	}

	// Cancelled while sleeping through a cool-down.
	if err := l.Throttled(t.Context(), time.Minute); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	l.opts.Sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}
	if err := l.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait cancelled during the cool-down: %v", err)
	}
}

func TestRedisDownFailsClosed(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	// The client's own retries (go-redis MaxRetries, DialerRetries) bound how long a call takes to fail; this
	// test turns them off to stay fast.
	b.rdb = redis.NewClient(&redis.Options{Addr: b.mr.Addr(), MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { b.rdb.Close() })
	l := b.newLimiter(t, Options{Rate: 10})
	b.mr.Close()
	if err := l.Wait(t.Context()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Wait with Redis down: %v, want ErrUnavailable", err)
	}
	if s := b.clock.Slept(); len(s) != 0 {
		t.Errorf("Wait with Redis down slept %v; it must return at once", s)
	}
	if err := l.Throttled(t.Context(), 0); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Throttled with Redis down: %v, want ErrUnavailable", err)
	}
	if _, err := l.Rate(t.Context()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Rate with Redis down: %v, want ErrUnavailable", err)
	}
}

func TestStateExpires(t *testing.T) {
	t.Parallel()
	b := setupFake(t)
	l := b.newLimiter(t, Options{Rate: 10, MaxRetryAfter: time.Hour})
	if err := l.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := l.Throttled(t.Context(), 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	state := b.key + ":state"
	if ttl := b.mr.TTL(state); ttl != stateTTL+10*time.Minute {
		t.Errorf("TTL of %s = %s, want the cool-down plus %s", state, ttl, stateTTL)
	}
	b.clock.Advance(stateTTL + 10*time.Minute)
	if b.mr.Exists(state) {
		t.Errorf("%s still exists after its TTL", state)
	}
	if r := rateOf(t, l); r != 10 {
		t.Errorf("rate after the state expired = %v, want the configured 10", r)
	}
}
