// Package ratelimit paces calls to the enrichment vendor across every worker process that shares
// one API key.
//
// The vendor's limit belongs to the key, so the limiter is global: its state lives in Redis and
// all processes take their slots from the same GCRA (generic cell rate algorithm). A 429 seen by
// any process sets a shared cool-down that every process honours, and the shared rate adapts:
// down multiplicatively on a 429, back up additively and slowly on success (AIMD), between
// Options.MinRate and Options.Rate, so a wrong configured rate still converges. A local
// golang.org/x/time/rate limiter paces each process's own attempts at the shared rate, so that
// goroutines of one process don't all ask Redis at the same moment.
//
// Layout in Redis: one hash at "<Options.Key>:state" holds everything (fields in scripts.go). It
// expires one hour after the last write (longer while a cool-down lasts), so an idle key leaves
// nothing behind and restarts at the configured rate. Redis ≥ 5 is needed (scripts call TIME
// before writing).
package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// The AIMD constants and bookkeeping intervals. They are not options: the vendor's answers,
// not the configuration, are what the adaptation follows.
const (
	// decreaseFactor multiplies the shared rate on a counted 429.
	decreaseFactor = 0.7
	// increaseStep is the rate regained per second of success, as a fraction of Options.Rate
	// (from MinRate = Rate/20 back to Rate in about 19 s of success).
	increaseStep = 0.05
	// maxCredit caps the success time one Succeeded call can credit, so that the first success
	// after an idle hour does not jump straight back to the configured rate.
	maxCredit = time.Second
	// reportEvery is how often at most one process reports successes to Redis while the shared
	// rate is below the configured rate or the strike counter is set; otherwise Succeeded is free.
	reportEvery = 200 * time.Millisecond
	// stateTTL is how long the shared state outlives its last write.
	stateTTL = time.Hour
)

// DefaultMaxRetryAfter is Options.MaxRetryAfter's default: the longest shared cool-down one
// Retry-After can set. Every worker on the key honours the cool-down, so one wrong header (a
// year, a date in the wrong century) would otherwise stop them all for as long as it says.
const DefaultMaxRetryAfter = 5 * time.Minute

// ErrUnavailable is wrapped by the errors of Wait, WaitN, Throttled and Rate when Redis cannot be
// reached or fails. The limiter then fails closed: the caller must not call the vendor, and should
// treat the error as transient (retry the task later with backoff).
var ErrUnavailable = errors.New("ratelimit: shared limiter unavailable")

// NotYetError is returned by Wait when the caller may not send for longer than Options.MaxWait:
// "not yet" becomes an error the task scheduler acts on (retry or snooze after RetryIn) instead of
// a goroutine that sleeps through a long cool-down.
type NotYetError struct {
	RetryIn  time.Duration // how long until a slot may be free
	CoolDown bool          // true: a vendor 429 cool-down; false: the shared rate is used up
}

func (e *NotYetError) Error() string {
	why := "shared rate used up"
	if e.CoolDown {
		why = "vendor 429 cool-down"
	}
	return fmt.Sprintf("ratelimit: not yet (%s), retry in %s", why, e.RetryIn)
}

// KeyPrefix returns the Options.Key for a vendor API key: "enrichq:rl:" and the first 12 hex
// digits of the key's SHA-256, so the key itself never appears in Redis.
func KeyPrefix(apiKey string) string {
	sum := sha256.Sum256([]byte(apiKey))
	return "enrichq:rl:" + hex.EncodeToString(sum[:])[:12]
}

// Options configure a Limiter. Zero values take the defaults named on each field.
type Options struct {
	// Key is the Redis key prefix of the vendor API key (see KeyPrefix); the state is the hash
	// "<Key>:state". Required. Every process using the same API key must use the same Key.
	Key string
	// Rate is the configured limit in requests per second: the vendor's limit for the key, and the
	// ceiling of the adaptive rate. Required, > 0 and finite. Every process on the key should
	// configure the same Rate, Burst and MinRate.
	Rate float64
	// Burst is how many requests may go at once after an idle period. Default max(1, ⌈Rate/10⌉),
	// i.e. 100 ms worth: enough to absorb scheduling jitter without losing slots, small enough that
	// any one-second window holds at most 1.1×Rate requests (a vendor counting per second sees no
	// double burst). WaitN with n > Burst fails.
	Burst int
	// MinRate is the floor of the adaptive rate. Default Rate/20. Must be in (0, Rate].
	MinRate float64
	// BaseBackoff and MaxBackoff shape the shared cool-down after a 429 without Retry-After:
	// Backoff(strikes-1, BaseBackoff, MaxBackoff, Rand). BaseBackoff is also the shortest period
	// in which many 429s count once. Defaults 500 ms and 30 s.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// MaxRetryAfter caps the cool-down a vendor's Retry-After sets (a longer one counts as this
	// long, and is logged). Default DefaultMaxRetryAfter, 5 minutes. A vendor that truly needs
	// longer answers 429 again when the cool-down ends, and sets it again.
	MaxRetryAfter time.Duration
	// MaxWait caps how long Wait sleeps: when the next slot is further away, Wait returns a
	// *NotYetError instead. Default 0: no cap, Wait sleeps until the slot or until ctx ends.
	MaxWait time.Duration
	// Now is the local clock, used by the local pacer and to space success reports. Default time.Now.
	// (The shared state runs on the Redis server's clock.)
	Now func() time.Time
	// Sleep waits d or until ctx ends, returning ctx.Err() then. Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for jitter; it must be safe for concurrent use.
	// Default math/rand/v2.Float64.
	Rand func() float64
	// Logger receives a line per counted 429 and per failed success report. Default: discard.
	Logger *slog.Logger
}

// Limiter is the process-side handle of one vendor key's shared limiter. It is safe for
// concurrent use; make one per process and key.
type Limiter struct {
	rdb  redis.UniversalClient
	key  string
	opts Options

	local *rate.Limiter // paces this process's attempts at the shared rate

	// Last shared state seen, so that Succeeded costs nothing while there is nothing to report.
	shared  atomic.Uint64 // math.Float64bits of the shared rate
	strikes atomic.Int64

	mu         sync.Mutex
	lastReport time.Time
}

// New returns a Limiter on rdb for opts.Key. It does not contact Redis.
func New(rdb redis.UniversalClient, opts Options) (*Limiter, error) {
	if rdb == nil {
		return nil, errors.New("ratelimit: nil Redis client")
	}
	if opts.Key == "" {
		return nil, errors.New("ratelimit: Options.Key is required")
	}
	if !(opts.Rate > 0) || math.IsInf(opts.Rate, 0) {
		return nil, fmt.Errorf("ratelimit: Options.Rate must be > 0 and finite, got %v", opts.Rate)
	}
	if opts.Burst == 0 {
		opts.Burst = max(1, int(math.Ceil(opts.Rate/10)))
	}
	if opts.Burst < 0 {
		return nil, fmt.Errorf("ratelimit: Options.Burst must be >= 0, got %d", opts.Burst)
	}
	if opts.MinRate == 0 {
		opts.MinRate = opts.Rate / 20
	}
	if !(opts.MinRate > 0) || opts.MinRate > opts.Rate {
		return nil, fmt.Errorf("ratelimit: Options.MinRate must be in (0, Rate], got %v", opts.MinRate)
	}
	if opts.BaseBackoff == 0 {
		opts.BaseBackoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.BaseBackoff < 0 || opts.MaxBackoff < opts.BaseBackoff {
		return nil, fmt.Errorf("ratelimit: need 0 < BaseBackoff <= MaxBackoff, got %s and %s", opts.BaseBackoff, opts.MaxBackoff)
	}
	if opts.MaxRetryAfter == 0 {
		opts.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if opts.MaxRetryAfter < 0 {
		return nil, fmt.Errorf("ratelimit: Options.MaxRetryAfter must be >= 0, got %s", opts.MaxRetryAfter)
	}
	if opts.MaxWait < 0 {
		return nil, fmt.Errorf("ratelimit: Options.MaxWait must be >= 0, got %s", opts.MaxWait)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Limiter{
		rdb:   rdb,
		key:   opts.Key + ":state",
		opts:  opts,
		local: rate.NewLimiter(rate.Limit(opts.Rate), opts.Burst),
	}
	l.shared.Store(math.Float64bits(opts.Rate))
	return l, nil
}

// Wait is WaitN(ctx, 1).
func (l *Limiter) Wait(ctx context.Context) error { return l.WaitN(ctx, 1) }

// WaitN blocks until this caller may send one request that weighs n slots (a bulk call may weigh
// more than one; n <= Burst). It honours the shared cool-down, then reserves n slots on the shared
// GCRA timeline at the current adaptive rate, up to one second ahead (or MaxWait when shorter), in
// one Redis round trip, and sleeps until its slot: callers of every process queue on one timeline,
// so no slot is lost between two asks and the vendor sees evenly spaced requests. When no slot is
// free within that horizon it sleeps until one is (plus up to one slot of jitter) and asks again;
// it never polls. Before each ask, the local pacer spaces this process's asks at the shared rate.
//
// It returns ctx.Err() when ctx ends (a reserved slot is then lost), a *NotYetError when the wait
// would exceed Options.MaxWait, and an error wrapping ErrUnavailable, at once and without
// retrying, when Redis fails: the limiter fails closed, and the caller should treat that as
// transient. How long a failing call takes is the Redis client's business (go-redis MaxRetries,
// DialerRetries, timeouts).
func (l *Limiter) WaitN(ctx context.Context, n int) error {
	if n < 1 || n > l.opts.Burst {
		return fmt.Errorf("ratelimit: WaitN(%d) outside [1, Burst=%d]", n, l.opts.Burst)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := l.opts.Now()
		r := l.local.ReserveN(now, n) // never fails: n <= Burst
		if d := r.DelayFrom(now); d > 0 {
			if err := l.pause(ctx, d, false); err != nil {
				r.CancelAt(l.opts.Now())
				return err
			}
		}
		res, err := l.run(ctx, takeScript, 5, l.opts.Burst, n, l.horizon().Microseconds())
		if err != nil {
			return err
		}
		l.observe(res)
		if res.int(0) == 1 {
			// The slot is ours, at most horizon ahead: sleep until it. Canceled, it is lost:
			// at most one slot of the shared rate per canceled caller.
			if d := res.micros(1); d > 0 {
				return l.opts.Sleep(ctx, d)
			}
			return nil
		}
		wait := res.micros(1) + time.Duration(l.opts.Rand()*float64(time.Second)/l.sharedRate())
		if err := l.pause(ctx, wait, res.int(4) == 1); err != nil {
			return err
		}
	}
}

// horizon is how far ahead Wait reserves a slot: one second, or MaxWait when shorter.
func (l *Limiter) horizon() time.Duration {
	h := time.Second
	if l.opts.MaxWait > 0 && l.opts.MaxWait < h {
		h = l.opts.MaxWait
	}
	return h
}

// pause sleeps d, or returns a *NotYetError when d exceeds MaxWait.
func (l *Limiter) pause(ctx context.Context, d time.Duration, coolDown bool) error {
	if l.opts.MaxWait > 0 && d > l.opts.MaxWait {
		return &NotYetError{RetryIn: d, CoolDown: coolDown}
	}
	return l.opts.Sleep(ctx, d)
}

// Throttled records a 429 seen by this process, retryAfter being the vendor's Retry-After (<= 0
// when it sent none; above MaxRetryAfter it counts as MaxRetryAfter). The first 429 of an episode counts: every process then waits until
// now+retryAfter, or without Retry-After for Backoff(strikes-1, BaseBackoff, MaxBackoff, Rand)
// where strikes is the shared count of consecutive counted 429s; the shared rate is multiplied by
// 0.7 (not below MinRate); and the GCRA restarts empty when the cool-down ends, so the processes
// resume at the new rate without a burst. Further 429s in the same episode (before the cool-down
// ends, and at least BaseBackoff) come from requests already in flight: they count once, and only
// extend the cool-down when their Retry-After reaches further.
//
// The error wraps ErrUnavailable when Redis fails (or is ctx.Err()).
func (l *Limiter) Throttled(ctx context.Context, retryAfter time.Duration) error {
	if retryAfter > l.opts.MaxRetryAfter {
		l.opts.Logger.Warn("vendor Retry-After capped", "key", l.opts.Key, "retry_after", retryAfter, "cap", l.opts.MaxRetryAfter)
		retryAfter = l.opts.MaxRetryAfter
	}
	res, err := l.run(ctx, throttleScript, 4, l.opts.Burst, max(retryAfter, 0).Microseconds(),
		l.opts.BaseBackoff.Microseconds(), l.opts.MaxBackoff.Microseconds(), l.opts.Rand(), decreaseFactor)
	if err != nil {
		return err
	}
	before := l.sharedRate()
	l.observe(res)
	if res.int(0) == 1 {
		l.opts.Logger.Info("vendor rate limit hit: all workers on the key cool down",
			"key", l.opts.Key, "retry_after", retryAfter, "cool_down", res.micros(1),
			"strikes", res.int(3), "rate_before", before, "rate", l.sharedRate())
	}
	return nil
}

// Succeeded records a call the vendor did not answer with 429. It resets the shared count of
// consecutive 429s and raises the shared rate by 5 % of Rate per second of success, never above
// Rate. While the rate is at Rate and no 429 is counted it costs nothing; otherwise each process
// reports at most every 200 ms. Successes of requests sent before the last cool-down ended change
// nothing. Redis errors are logged, not returned: a lost report only slows the recovery.
func (l *Limiter) Succeeded(ctx context.Context) {
	if l.sharedRate() >= l.opts.Rate && l.strikes.Load() == 0 {
		return
	}
	l.mu.Lock()
	now := l.opts.Now()
	due := now.Sub(l.lastReport) >= reportEvery
	if due {
		l.lastReport = now
	}
	l.mu.Unlock()
	if !due {
		return
	}
	res, err := l.run(ctx, succeedScript, 2, increaseStep, maxCredit.Microseconds())
	if err != nil {
		l.opts.Logger.Warn("ratelimit: reporting success failed", "key", l.opts.Key, "err", err)
		return
	}
	l.observeRate(res.str(0))
	l.strikes.Store(res.int(1))
}

// Configured is Options.Rate, the configured limit in requests per second: what a vendor's own
// statement of its limit is checked against.
func (l *Limiter) Configured() float64 { return l.opts.Rate }

// Rate returns the current shared rate in requests per second, for logs and metrics.
func (l *Limiter) Rate(ctx context.Context) (float64, error) {
	s, err := l.rdb.HGet(ctx, l.key, "rate").Result()
	if errors.Is(err, redis.Nil) {
		return l.opts.Rate, nil
	}
	if err != nil {
		return 0, l.unavailable(ctx, err)
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("ratelimit: bad rate %q in %s: %w", s, l.key, err)
	}
	return min(max(r, l.opts.MinRate), l.opts.Rate), nil
}

// run runs a script on the state hash with the common arguments (conf, minr, ttl) followed by
// args, and checks that the reply has at least size elements.
func (l *Limiter) run(ctx context.Context, s *redis.Script, size int, args ...any) (reply, error) {
	argv := append([]any{l.opts.Rate, l.opts.MinRate, stateTTL.Milliseconds()}, args...)
	v, err := s.Run(ctx, l.rdb, []string{l.key}, argv...).Slice()
	if err != nil {
		return nil, l.unavailable(ctx, err)
	}
	if len(v) < size {
		return nil, fmt.Errorf("%w: %s: script reply %v has %d elements, want %d", ErrUnavailable, l.opts.Key, v, len(v), size)
	}
	return v, nil
}

// reply is a script's answer: integers and strings at fixed positions (see scripts.go).
type reply []any

func (r reply) int(i int) int64 {
	v, _ := r[i].(int64)
	return v
}

func (r reply) str(i int) string {
	v, _ := r[i].(string)
	return v
}

func (r reply) micros(i int) time.Duration { return time.Duration(r.int(i)) * time.Microsecond }

func (l *Limiter) unavailable(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, l.opts.Key, err)
}

// observe takes in the {_, _, rate, strikes, ...} of a take or throttle reply.
func (l *Limiter) observe(res reply) {
	l.observeRate(res.str(2))
	l.strikes.Store(res.int(3))
}

// observeRate records the shared rate and paces the local limiter at it.
func (l *Limiter) observeRate(s string) {
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || r == l.sharedRate() {
		return
	}
	l.shared.Store(math.Float64bits(r))
	l.local.SetLimitAt(l.opts.Now(), rate.Limit(r))
}

func (l *Limiter) sharedRate() float64 { return math.Float64frombits(l.shared.Load()) }

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
