package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// faultNames are the faults, in the order they run. The last ones are
// scenarios: each runs against a system of its own (its own vendor, workers
// and database), after the faults of the shared one.
var faultNames = []string{"sigkill", "redis-flush", "pg-restart", "429-storm", "vendor-faults", "poison", "sigterm", "idempotent-submit",
	chargedMisses}

// chargedMisses is the scenario of a vendor that prices by outcome and
// charges its misses (issue 30): single lookups of 1,000 companies x 1 role,
// profile and email, a worker SIGKILLed at 3 s, Redis flushed at 5 s, a new
// worker started.
const chargedMisses = "charged-misses"

// scenario reports whether fault runs against a system of its own.
func scenario(fault string) bool { return fault == chargedMisses }

type options struct {
	bin          string
	faults       []string
	rows         int
	lookups      string
	bulk         bool
	logDir       string
	keep         bool
	timeout      time.Duration
	phaseTimeout time.Duration

	vendorRPS     float64
	latency       time.Duration
	baseFaults    string
	harderFaults  string
	vendorTimeout time.Duration
	seed          int64
	noReplayHdr   bool
	prices        string // the fake vendor's -prices

	scenarioRows int
	scenarioRPS  float64

	shutdownTimeout time.Duration

	kills      int
	pgDown     time.Duration
	storm      time.Duration
	stormRPS   float64
	poisonRows int
	redisBin   string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	faults := fs.String("faults", "all", "faults to inject, comma-separated, in this order: "+strings.Join(faultNames, ", ")+"; or all")
	fs.StringVar(&o.bin, "bin", "bin", "directory of the api, worker, scheduler and fakevendor binaries (make dev)")
	fs.IntVar(&o.rows, "rows", 3000, "lookups in the job each fault runs against")
	fs.StringVar(&o.lookups, "lookups", "profile,email", "stages of the jobs")
	fs.BoolVar(&o.bulk, "bulk", true, "workers use the vendor's bulk endpoint (ENRICHQ_VENDOR_BULK)")
	fs.StringVar(&o.logDir, "logs", ".data/chaos", "where the processes' logs go")
	fs.BoolVar(&o.keep, "keep", false, "keep the chaos database at the end (it is kept anyway when a check fails)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up after this long")
	fs.DurationVar(&o.phaseTimeout, "phase-timeout", 5*time.Minute, "longest wait for one fault's job to finish")
	fs.Float64Var(&o.vendorRPS, "vendor-rps", 8, "the fake vendor's rate limit, and the workers' ENRICHQ_VENDOR_RPS")
	fs.DurationVar(&o.latency, "vendor-latency", 200*time.Millisecond, "the fake vendor's latency (jitter: half of it)")
	fs.StringVar(&o.baseFaults, "base-faults", "fail=0.05,malformed=0.01,slow=0.01,reset=0.01",
		"faults the vendor has throughout: shares of calls answered 503, malformed, slower than -vendor-timeout, reset")
	fs.StringVar(&o.harderFaults, "vendor-faults", "fail=0.2,malformed=0.04,slow=0.04,reset=0.04", "faults during the vendor-faults fault")
	fs.DurationVar(&o.vendorTimeout, "vendor-timeout", 2*time.Second, "the workers' vendor call timeout (ENRICHQ_VENDOR_TIMEOUT); slow answers take twice that")
	fs.Int64Var(&o.seed, "seed", 1, "the fake vendor's seed")
	fs.BoolVar(&o.noReplayHdr, "no-replay-header", false, "the fake vendor replays Idempotency-Keys without the Idempotent-Replayed header (known only by X-Credits-Charged: 0)")
	fs.IntVar(&o.scenarioRows, "charged-misses-rows", 1000, "companies (one role each) of the charged-misses scenario's job")
	fs.Float64Var(&o.scenarioRPS, "charged-misses-rps", 40, "the vendor's rate limit in the charged-misses scenario")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "the workers' graceful stop bound (ENRICHQ_SHUTDOWN_TIMEOUT)")
	fs.IntVar(&o.kills, "kills", 3, "worker SIGKILLs in the sigkill fault")
	fs.DurationVar(&o.pgDown, "pg-down", 5*time.Second, "how long Postgres is unreachable in the pg-restart fault")
	fs.DurationVar(&o.storm, "storm", 15*time.Second, "how long the 429 storm lasts")
	fs.Float64Var(&o.stormRPS, "storm-rps", 0.05, "the vendor's rate limit during the storm")
	fs.IntVar(&o.poisonRows, "poison-rows", 0, "poison rows in the poison fault's job (0: 1 in 200, at least 3)")
	fs.StringVar(&o.redisBin, "redis-server", "redis-server", "the redis-server binary for the private Redis")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *faults == "all" || *faults == "" {
		o.faults = faultNames
	} else {
		for _, f := range strings.Split(*faults, ",") {
			f = strings.TrimSpace(f)
			if !slices.Contains(faultNames, f) {
				return o, fmt.Errorf("-faults: unknown fault %q (known: %s)", f, strings.Join(faultNames, ", "))
			}
			o.faults = append(o.faults, f)
		}
		// Always in the documented order.
		slices.SortFunc(o.faults, func(a, b string) int { return slices.Index(faultNames, a) - slices.Index(faultNames, b) })
		o.faults = slices.Compact(o.faults)
	}
	if o.rows < 10 {
		return o, errors.New("-rows: at least 10")
	}
	if o.scenarioRows < 10 {
		return o, errors.New("-charged-misses-rows: at least 10")
	}
	o.prices = "default"
	if o.poisonRows <= 0 {
		o.poisonRows = max(3, o.rows/200)
	}
	if _, err := parseFaults(o.baseFaults, o.vendorTimeout); err != nil {
		return o, fmt.Errorf("-base-faults: %w", err)
	}
	if _, err := parseFaults(o.harderFaults, o.vendorTimeout); err != nil {
		return o, fmt.Errorf("-vendor-faults: %w", err)
	}
	return o, nil
}

// vendorFaults are the fault shares of the fake vendor, as POST /_fake/faults takes them.
type vendorFaults struct {
	Fail      float64 `json:"fail_rate"`
	Malformed float64 `json:"malformed_rate"`
	Slow      float64 `json:"slow_rate"`
	SlowDelay string  `json:"slow_delay"`
	Reset     float64 `json:"reset_rate"`
}

// parseFaults reads "fail=0.05,malformed=0.01,slow=0.01,reset=0.01".
func parseFaults(s string, vendorTimeout time.Duration) (vendorFaults, error) {
	f := vendorFaults{SlowDelay: (2 * vendorTimeout).String()}
	if strings.TrimSpace(s) == "" || s == "none" {
		return f, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		var x float64
		if _, err := fmt.Sscanf(v, "%g", &x); !ok || err != nil || x < 0 || x > 1 {
			return f, fmt.Errorf("%q: want name=share, a share between 0 and 1", kv)
		}
		switch k {
		case "fail":
			f.Fail = x
		case "malformed":
			f.Malformed = x
		case "slow":
			f.Slow = x
		case "reset":
			f.Reset = x
		default:
			return f, fmt.Errorf("%q: unknown fault (fail, malformed, slow, reset)", k)
		}
	}
	if f.Fail+f.Malformed+f.Slow+f.Reset > 1 {
		return f, errors.New("shares add up to more than 1")
	}
	return f, nil
}

func (f vendorFaults) String() string {
	return fmt.Sprintf("%g%% 503, %g%% malformed, %g%% slower than the timeout (%s), %g%% reset",
		f.Fail*100, f.Malformed*100, f.Slow*100, f.SlowDelay, f.Reset*100)
}
