// Command fakepdl serves the fake of the People Data Labs-shaped vendor
// (enrichtest.PDL) for demos and benchmarks.
//
//	fakepdl -addr 127.0.0.1:0 -keys pdl-key -hit-rate 0.5 -segment-hit-rates fr=0.8,de=0.8,com=0.1
//	fakepdl -wrong-person-rate 0.6 -wrong-strong-rate 0.05 -free-plan -overage-credits 100
//
// It answers as the real vendor does: rate-limit headers as per-window
// dicts, the balance split into purchased and overage credits, weak
// matches of namesakes when asked, contact fields as booleans on a Free plan.
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
	"net/http"
	"strings"

	"github.com/enrichq/enrichq/dev/internal/fakecmd"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
)

func main() { fakecmd.Main("fakepdl", run) }

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
	fs.Float64Var(&opts.WrongPersonRate, "wrong-person-rate", 0, "share of unknown lookups by name at a company answered with a namesake who once worked there (billed)")
	fs.IntVar(&opts.WrongLikelihood, "wrong-likelihood", opts.WrongLikelihood, "likelihood of those namesakes (the vendor's default floor is 2)")
	fs.Float64Var(&opts.WrongStrongRate, "wrong-strong-rate", 0, "share of those namesakes scored 7, above the usual floors")
	fs.BoolVar(&opts.FreePlan, "free-plan", false, "answer contact fields as true/false, as on a Free plan")
	fs.Int64Var(&opts.OverageCredits, "overage-credits", 0, "overage credits each key may spend past its purchased ones")
	fs.Float64Var(&opts.FailRate, "fail-rate", 0, "share of calls answered 503")
	fs.Int64Var(&opts.Seed, "seed", opts.Seed, "seed of who is known, faults and bulk order")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var err error
	if opts.SegmentHitRates, err = fakecmd.Rates(*segRates); err != nil {
		return fmt.Errorf("-segment-hit-rates: %w", err)
	}
	if opts.APIKeys = fakecmd.List(*keys); len(opts.APIKeys) == 0 {
		return errors.New("-keys: at least one key is needed")
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))

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
	if err := fakecmd.Serve(ctx, "fakepdl", *addr, mux, log, stdout, "keys", len(opts.APIKeys), "hit_rate", opts.HitRate,
		"segment_hit_rates", opts.SegmentHitRates, "rpm", opts.RPM, "seed", opts.Seed); err != nil {
		return err
	}
	log.Info("fakepdl stopped", "total_credits", pdl.TotalBilled())
	return nil
}
