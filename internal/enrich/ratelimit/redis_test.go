package ratelimit

import (
	"errors"
	"math"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/dev/chaos/rig"
)

// These tests run the scripts on the real Redis at REDIS_URL, on real time.

// TestGlobalLimitAcrossProcesses: four limiters on one key, as four processes would be, together
// get no more than the GCRA allows over the measured interval: burst + rate × window. The window
// is measured on the Redis clock, the one the GCRA runs on, from before the first Wait to after
// the last, so a slow machine only widens it and the bound cannot flake.
func TestGlobalLimitAcrossProcesses(t *testing.T) {
	t.Parallel()
	const (
		rate  = 50.0
		burst = 3
		procs = 4
		each  = 25
	)
	rdb := realRedis(t)
	key := uniqueKey(t)
	cleanupKey(t, rdb, key)

	start, err := rdb.Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range procs {
		l, err := New(realRedis(t), Options{Key: key, Rate: rate, Burst: burst})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for range each {
				if err := l.Wait(t.Context()); err != nil {
					t.Error(err)
					return
				}
				granted.Add(1)
			}
		})
	}
	wg.Wait()
	end, err := rdb.Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}

	window := end.Sub(start).Seconds()
	n := float64(granted.Load())
	allowed := burst + rate*window
	t.Logf("%d processes: %v grants in %.3fs (%.1f/s, limit %v/s, burst %d, bound %.1f)", procs, n, window, n/window, rate, burst, allowed)
	if n != procs*each {
		t.Fatalf("%v grants, want %d", n, procs*each)
	}
	if n > allowed+1 { // +1: rounding of the µs clock
		t.Errorf("%v grants in %.3fs exceed burst + rate × window = %.1f: the limit is not global", n, window, allowed)
	}
}

// TestRealRedisCoolDownAndAdaptation runs Throttled and Succeeded on real Redis (the fake-time
// tests run them on miniredis's Lua) without waiting for time to pass.
func TestRealRedisCoolDownAndAdaptation(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	key := uniqueKey(t)
	cleanupKey(t, rdb, key)
	told, err := New(rdb, Options{Key: key, Rate: 20})
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(rdb, Options{Key: key, Rate: 20, MaxWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Wait(t.Context()); err != nil {
		t.Fatalf("Wait before any 429: %v", err)
	}

	if err := told.Throttled(t.Context(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	err = other.Wait(t.Context())
	var notYet *NotYetError
	if !errors.As(err, &notYet) || !notYet.CoolDown || notYet.RetryIn <= time.Second || notYet.RetryIn > 2*time.Second+time.Second/14 {
		t.Fatalf("Wait in another process after a 429 with Retry-After 2s: %v, want a cool-down *NotYetError of about 2s", err)
	}

	// More 429s of the same episode and a stale success change nothing.
	if err := other.Throttled(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	other.Succeeded(t.Context())
	r, err := other.Rate(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r-14) > 1e-9 {
		t.Errorf("shared rate = %v, want 20 × 0.7 = 14, cut once", r)
	}

	ttl, err := rdb.PTTL(t.Context(), key+":state").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= stateTTL || ttl > stateTTL+3*time.Second {
		t.Errorf("TTL of the state = %s, want %s plus the cool-down", ttl, stateTTL)
	}
}

// BenchmarkWait measures the hot path, one script round trip, at an unlimited rate (1e9/s: the
// GCRA never makes a caller wait).
func BenchmarkWait(b *testing.B) {
	rdb := realRedis(b)
	// serial: one goroutine, i.e. the round-trip latency. parallel: 8 goroutines per CPU, as a
	// worker process with many concurrent calls; this is the throughput Redis sustains.
	for _, mode := range []string{"serial", "parallel"} {
		b.Run(mode, func(b *testing.B) {
			key := uniqueKey(b)
			cleanupKey(b, rdb, key)
			l, err := New(rdb, Options{Key: key, Rate: 1e9, Burst: 1e9})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			if mode == "serial" {
				for b.Loop() {
					if err := l.Wait(b.Context()); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := l.Wait(b.Context()); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// TestScriptCacheFlushedBetweenCalls: a Sentinel promotion (or a restart)
// hands the limiter a Redis whose script cache is empty. Every script runs
// through Script.Run (EVALSHA, then EVAL on NOSCRIPT), so no call fails for
// it. The flush is of a private redis-server: SCRIPT FLUSH is server-wide.
func TestScriptCacheFlushedBetweenCalls(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server on PATH (Debian: apt-get install redis-server)")
	}
	srv, err := rig.StartRedis(t.Context(), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	var logs strings.Builder
	l, err := New(rdb, Options{Key: uniqueKey(t), Rate: 100, Burst: 1, MaxWait: 500 * time.Millisecond, Logger: newTextLogger(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	flush := func() {
		t.Helper()
		if err := rdb.ScriptFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
	}

	flush()
	if err := l.Wait(t.Context()); err != nil {
		t.Fatalf("take after a flush: %v", err)
	}
	flush()
	if err := l.Throttled(t.Context(), time.Minute); err != nil { // a cool-down that outlasts the test
		t.Fatalf("throttle after a flush: %v", err)
	}
	if r, err := l.Rate(t.Context()); err != nil || r >= 100 {
		t.Fatalf("rate after a 429: %v, %v", r, err)
	}
	flush()
	l.Succeeded(t.Context())
	if strings.Contains(logs.String(), "reporting success failed") {
		t.Fatalf("success report after a flush: %s", logs.String())
	}
	flush()
	var notYet *NotYetError
	if err := l.Wait(t.Context()); !errors.As(err, &notYet) || !notYet.CoolDown {
		t.Fatalf("take during the cool-down, after a flush: %v, want a cool-down NotYetError", err)
	}
}
