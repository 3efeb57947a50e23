// Command fakevendor serves the seed vendor's fake (enrichtest.Seed, package
// internal/enrich/enrichtest) for demos, chaos runs and benchmarks.
//
//	fakevendor -addr 127.0.0.1:9090 -keys test-key -rps 50 -burst 10 -fail-rate 0.02
//
// It prints one line "fakevendor listening on http://ADDR" on stdout when it
// is ready (with -addr 127.0.0.1:0, scripts read the port from it), logs to
// stderr, and shuts down gracefully on SIGINT or SIGTERM. Faults can be
// changed while it runs: POST /_fake/faults {"fail_rate": 0.1, "latency": "50ms"}.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/enrichq/enrichq/dev/internal/fakecmd"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
)

func main() { fakecmd.Main("fakevendor", run) }

// run serves the fake until ctx is done, then shuts down gracefully.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts := enrichtest.DefaultSeedOptions()
	fs := flag.NewFlagSet("fakevendor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9090", "listen address (port 0: any free port)")
	keys := fs.String("keys", strings.Join(opts.APIKeys, ","), "accepted API keys, comma-separated")
	noPlanKeys := fs.String("no-plan-keys", "", "API keys answered 403 plan_required, comma-separated")
	fs.Float64Var(&opts.RPS, "rps", 0, "requests per second per key (0: unlimited)")
	fs.IntVar(&opts.Burst, "burst", 0, "rate limit burst (0: 1)")
	fs.DurationVar(&opts.Latency, "latency", 0, "latency added to every answer")
	fs.DurationVar(&opts.LatencyJitter, "latency-jitter", 0, "uniform jitter around -latency")
	fs.Float64Var(&opts.ProfileHitRate, "profile-hit-rate", opts.ProfileHitRate, "share of profile lookups that match")
	tldRates := fs.String("profile-hit-rates", "", "profile hit rates by the query's top-level domain, overriding -profile-hit-rate: com=0.85,fr=0.25")
	fs.Float64Var(&opts.EmailHitRate, "email-hit-rate", opts.EmailHitRate, "share of email lookups that find one")
	fs.Float64Var(&opts.PhoneHitRate, "phone-hit-rate", opts.PhoneHitRate, "share of phone lookups that find one")
	fs.Float64Var(&opts.FailRate, "fail-rate", 0, "share of calls answered 503")
	fs.Float64Var(&opts.MalformedRate, "malformed-rate", 0, "share of calls answered 200 with broken JSON (charged)")
	fs.Float64Var(&opts.SlowRate, "slow-rate", 0, "share of calls delayed by -slow-delay (charged)")
	fs.DurationVar(&opts.SlowDelay, "slow-delay", 0, "delay of a slow call")
	fs.Float64Var(&opts.ResetRate, "reset-rate", 0, "share of calls whose connection is reset (charged)")
	fs.Int64Var(&opts.Seed, "seed", opts.Seed, "seed of faults, jitter and bulk order")
	fs.StringVar(&opts.RejectSubstring, "reject-substring", "", "inputs containing it are rejected 400 (poison rows)")
	fs.BoolVar(&opts.NoMatchAs200, "no-match-200", false, "answer no-matches 200 without the match instead of 404")
	fs.BoolVar(&opts.OmitCreditHeaders, "omit-credit-headers", false, "do not send X-Credits-*")
	fs.BoolVar(&opts.IgnoreIdempotency, "ignore-idempotency", false, "ignore Idempotency-Key")
	fs.BoolVar(&opts.NoReplayHeader, "no-replay-header", false, "replay Idempotency-Keys without the Idempotent-Replayed header (charged 0, as the contract allows)")
	fs.Int64Var(&opts.StartCredits, "start-credits", opts.StartCredits, "credit balance for X-Credits-Remaining")
	prices := fs.String("prices", "default", "price list: default (misses free, a profile search 2 match or not) or charged-misses (profile no-match 1 and match 2, email miss 5 and hit 10, phone miss 5 and hit 25)")
	logLevel := fs.String("log-level", "info", "debug logs every request; info, warn, error")
	err := fs.Parse(args)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	switch *prices {
	case "default":
		opts.Prices = enrichtest.DefaultSeedPrices()
	case "charged-misses":
		opts.Prices = enrichtest.SeedChargedMissPrices()
	default:
		return fmt.Errorf("-prices %q: want default or charged-misses", *prices)
	}
	if opts.ProfileHitRates, err = fakecmd.Rates(*tldRates); err != nil {
		return fmt.Errorf("-profile-hit-rates: %w", err)
	}
	opts.APIKeys = fakecmd.List(*keys)
	opts.NoPlanKeys = fakecmd.List(*noPlanKeys)
	if len(opts.APIKeys) == 0 && len(opts.NoPlanKeys) == 0 {
		return errors.New("-keys: at least one key is needed")
	}
	faults := enrichtest.SeedFaults{RPS: opts.RPS, Burst: opts.Burst, Latency: opts.Latency, LatencyJitter: opts.LatencyJitter,
		FailRate: opts.FailRate, MalformedRate: opts.MalformedRate, SlowRate: opts.SlowRate, SlowDelay: opts.SlowDelay, ResetRate: opts.ResetRate}
	if err := faults.Validate(); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	vendor := enrichtest.NewSeed(opts)
	if err := fakecmd.Serve(ctx, "fakevendor", *addr, logRequests(log, vendor), log, stdout, "keys", len(opts.APIKeys),
		"rps", opts.RPS, "burst", opts.Burst, "fail_rate", opts.FailRate, "malformed_rate", opts.MalformedRate,
		"reset_rate", opts.ResetRate, "seed", opts.Seed, "no_replay_header", opts.NoReplayHeader, "prices", *prices); err != nil {
		return err
	}
	s := vendor.Summary()
	log.Info("fakevendor stopped", "billed_calls", s.BilledCalls, "total_credits", s.TotalCredits)
	return nil
}

// logRequests logs each request at debug level (never its Authorization header).
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !log.Enabled(r.Context(), slog.LevelDebug) {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", sw.status, "duration", time.Since(start))
		}()
		next.ServeHTTP(sw, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach Hijack (the fake's connection resets).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
