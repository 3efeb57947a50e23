// Command fakehunter serves the fake of the Hunter-shaped email finder and
// verifier (enrichtest.Hunter) for demos and benchmarks.
//
//	fakehunter -addr 127.0.0.1:0 -keys hunter-key -hit-rate 0.6 -segment-hit-rates fr=0.8,com=0.3
//
// It prints one line "fakehunter listening on http://ADDR" on stdout when it
// is ready, logs to stderr, and shuts down gracefully on SIGINT or SIGTERM.
// GET /_fake/ledger answers what it billed, key by key and in all:
// {"searches", "verifications", "found", "verdicts"}; GET /v2/account
// answers each key's counters as the vendor does.
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

func main() { fakecmd.Main("fakehunter", run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts := enrichtest.DefaultHunterOptions()
	fs := flag.NewFlagSet("fakehunter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9092", "listen address (port 0: any free port)")
	keys := fs.String("keys", strings.Join(opts.APIKeys, ","), "accepted API keys (api_key or X-API-KEY), comma-separated")
	fs.Int64Var(&opts.Searches, "searches", opts.Searches, "each key's searches this month; spent, the finder answers 429")
	fs.Int64Var(&opts.Verifications, "verifications", opts.Verifications, "each key's verifications this month; spent, the verifier answers 429")
	fs.IntVar(&opts.PerSecond, "per-second", 0, "calls per key and endpoint each second, then 403 (0: unlimited; the vendor's 15 and 10)")
	fs.IntVar(&opts.StormCalls, "storm", 0, "answer each key's first N calls 403 (a storm)")
	fs.Float64Var(&opts.HitRate, "hit-rate", opts.HitRate, "share of lookups whose email it finds")
	segRates := fs.String("segment-hit-rates", "", "hit rates by the domain's top-level domain, overriding -hit-rate: fr=0.8,com=0.3")
	fs.Float64Var(&opts.CatchAllRate, "catch-all-rate", opts.CatchAllRate, "share of domains that accept every address")
	fs.Float64Var(&opts.InvalidRate, "invalid-rate", opts.InvalidRate, "share of addresses invalid")
	fs.Float64Var(&opts.UnknownRate, "unknown-rate", opts.UnknownRate, "share of addresses unknown")
	fs.Float64Var(&opts.SuppressedRate, "suppressed-rate", 0, "share of persons who opted out (451)")
	fs.Float64Var(&opts.WrongDomainRate, "wrong-domain-rate", 0, "share of unknown lookups answered, billed, with a namesake's address at another company")
	fs.BoolVar(&opts.PendingFirst, "pending-first", false, "answer each address's first verification 202")
	fs.Float64Var(&opts.NoAnswerRate, "no-answer-rate", 0, "share of verifications answered 222")
	fs.Float64Var(&opts.FailRate, "fail-rate", 0, "share of calls answered 503")
	fs.Int64Var(&opts.Seed, "seed", opts.Seed, "seed of who is found, verdicts and faults")
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

	fake := enrichtest.NewHunter(opts)
	mux := http.NewServeMux()
	mux.Handle("/v2/", fake)
	mux.HandleFunc("GET /_fake/ledger", func(w http.ResponseWriter, _ *http.Request) {
		var v struct {
			Searches      int64            `json:"searches"`
			Verifications int64            `json:"verifications"`
			Found         int64            `json:"found"`
			Verdicts      map[string]int64 `json:"verdicts"`
		}
		for _, k := range opts.APIKeys {
			u := fake.Usage(k)
			v.Searches += u.Searches
			v.Verifications += u.Verifications
		}
		st := fake.Stats()
		v.Found, v.Verdicts = st.Found, st.Verdicts
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	})
	if err := fakecmd.Serve(ctx, "fakehunter", *addr, mux, log, stdout,
		"keys", len(opts.APIKeys), "hit_rate", opts.HitRate, "seed", opts.Seed); err != nil {
		return err
	}
	log.Info("fakehunter stopped")
	return nil
}
