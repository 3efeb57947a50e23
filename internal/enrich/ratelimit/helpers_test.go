package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// fakeClock is the one clock of a fake-time test: the Limiter's Now and Sleep and the miniredis
// server's TIME (and, with ClockTTL, its TTLs) all follow it. Sleep advances it at once.
type fakeClock struct {
	mr *miniredis.Miniredis

	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.mr.SetTime(c.now)
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.slept = append(c.slept, d)
	c.mu.Unlock()
	c.Advance(d)
	return nil
}

// Slept returns the sleeps since the last call and forgets them.
func (c *fakeClock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.slept
	c.slept = nil
	return s
}

func total(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// fakeBundle is a miniredis server on a fake clock with a client; newLimiter makes limiters
// that share its key, as separate processes would.
type fakeBundle struct {
	mr    *miniredis.Miniredis
	rdb   *redis.Client
	clock *fakeClock
	key   string
}

func setupFake(t *testing.T) *fakeBundle {
	t.Helper()
	mr := miniredis.RunT(t)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mr.SetTime(start)
	mr.ClockTTL(true)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return &fakeBundle{mr: mr, rdb: rdb, clock: &fakeClock{mr: mr, now: start}, key: uniqueKey(t)}
}

// newLimiter makes a limiter on the bundle's key and clock; opts may set Rate, Burst, Rand, ...
func (b *fakeBundle) newLimiter(t *testing.T, opts Options) *Limiter {
	t.Helper()
	opts.Key = b.key
	opts.Now = b.clock.Now
	opts.Sleep = b.clock.Sleep
	if opts.Rand == nil {
		opts.Rand = func() float64 { return 0 }
	}
	l, err := New(b.rdb, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// realRedis connects to REDIS_URL (default redis://127.0.0.1:6379/0). The tests need it, as
// production does: without it they fail rather than skip.
func realRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("REDIS_URL %q: %v", url, err)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("these tests need Redis at REDIS_URL (%s): %v", url, err)
	}
	return rdb
}

// uniqueKey is a key prefix no other test (or run) uses.
func uniqueKey(t testing.TB) string {
	b := make([]byte, 6)
	rand.Read(b)
	return "enrichq:test:rl:" + t.Name() + ":" + hex.EncodeToString(b)
}

// cleanupKey deletes the state of prefix when the test ends.
func cleanupKey(t testing.TB, rdb redis.UniversalClient, prefix string) {
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(t.Context()), prefix+":state") })
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
