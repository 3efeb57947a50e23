// Command fakepdl serves the fake of the People Data Labs-shaped vendor
// (enrichtest.PDL) for demos and benchmarks.
//
//	fakepdl -addr 127.0.0.1:0 -keys pdl-key -hit-rate 0.5 -segment-hit-rates fr=0.8,de=0.8,com=0.1
//
// It prints one line "fakepdl listening on http://ADDR" on stdout when it is
// ready, logs to stderr, and shuts down gracefully on SIGINT or SIGTERM.
// GET /_fake/ledger answers what it billed: {"total_credits", "billed_calls",
// "matches", "lookups"}.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fakepdl:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts := enrichtest.DefaultPDLOptions()
	fs := flag.NewFlagSet("fakepdl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9091", "listen address (port 0: any free port)")
	keys := fs.String("keys", strings.Join(opts.APIKeys, ","), "accepted API keys (X-Api-Key), comma-separated")
	fs.Int64Var(&opts.StartCredits, "start-credits", opts.StartCredits, "each key's credits; at zero it answers 402")
	fs.IntVar(&opts.RPM, "rpm", 0, "calls per key and endpoint in each 60 s window (0: unlimited)")
	fs.DurationVar(&opts.Latency, "latency", 0, "latency added to every answer")
	fs.Float64Var(&opts.HitRate, "hit-rate", opts.HitRate, "share of lookups whose person it knows")
	segRates := fs.String("segment-hit-rates", "", "hit rates by the lookup's top-level domain (company, else email), overriding -hit-rate: fr=0.8,com=0.1")
	fs.Float64Var(&opts.WorkEmailRate, "work-email-rate", opts.WorkEmailRate, "share of known persons with a work email")
	fs.Float64Var(&opts.NoProfileRate, "no-profile-rate", opts.NoProfileRate, "share of known persons without a profile URL")
	fs.Float64Var(&opts.FailRate, "fail-rate", 0, "share of calls answered 503")
	fs.Int64Var(&opts.Seed, "seed", opts.Seed, "seed of who is known, faults and bulk order")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var err error
	if opts.SegmentHitRates, err = parseRates(*segRates); err != nil {
		return fmt.Errorf("-segment-hit-rates: %w", err)
	}
	if opts.APIKeys = splitList(*keys); len(opts.APIKeys) == 0 {
		return errors.New("-keys: at least one key is needed")
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	pdl := enrichtest.NewPDL(opts)
	mux := http.NewServeMux()
	mux.Handle("/v5/", pdl)
	mux.HandleFunc("GET /_fake/ledger", func(w http.ResponseWriter, _ *http.Request) {
		var v struct {
			TotalCredits int64 `json:"total_credits"`
			BilledCalls  int64 `json:"billed_calls"`
			Matches      int64 `json:"matches"`
			Lookups      int64 `json:"lookups"`
		}
		for _, c := range pdl.Ledger() {
			v.TotalCredits += c.Credits
			v.Matches += int64(c.Matches)
			v.Lookups += int64(c.Lookups)
			if c.Credits > 0 {
				v.BilledCalls++
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "fakepdl listening on %s\n", url)
	log.Info("fakepdl started", "url", url, "keys", len(opts.APIKeys), "hit_rate", opts.HitRate,
		"segment_hit_rates", opts.SegmentHitRates, "rpm", opts.RPM, "seed", opts.Seed)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("fakepdl stopped", "total_credits", pdl.TotalBilled())
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseRates reads "fr=0.8,com=0.1" (rates from 0 to 1 by segment).
func parseRates(s string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, kv := range splitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		r, err := strconv.ParseFloat(v, 64)
		if !ok || k == "" || err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("%q: want segment=rate, the rate from 0 to 1", kv)
		}
		out[strings.ToLower(k)] = r
	}
	return out, nil
}
