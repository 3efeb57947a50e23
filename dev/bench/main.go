// Command bench measures enrichq against its baselines, side by side in one
// run, on real Postgres, real Redis and the fake vendor, with the real
// binaries from -bin (make dev): the API, a worker, the scheduler and the
// fake vendor run as separate processes, and jobs go in and come out through
// the HTTP API.
//
//	make bench                                  # every scenario at full size
//	bin/bench -scenario ceiling,polling -repeat 3 -out bench.json
//	bin/bench -scale 0.1                        # every scenario at a tenth of its size
//
// Scenarios (issue 5):
//
//	seed      200 companies x 1 role, profile + email, vendor 300 ms latency, 10 req/s:
//	          single-lookup mode against calls / rate, bulk mode submit to last result;
//	          baseline: a sequential loop of single lookups, one call after another
//	ceiling   100,000 rows, bulk, vendor without latency or limit: rows/s end to end;
//	          baseline: the write path alone (claims and SaveOutcomes straight to Postgres)
//	ingest    a 1,000,000-row CSV uploaded: time to 201 and the API's peak RSS;
//	          baseline: psql \copy of the same file; then the same companies as a
//	          CRM export in Windows-1252 with semicolons, and as an .xlsx
//	          (-ingest-formats), each on a fresh API
//	polling   200 status polls/s while a ceiling job runs: latency percentiles
//	manyjobs  50 small jobs submitted while a 100,000-row job runs: each one's
//	          submit to finish
//	waterfall 600 people (name+domain and email at .com, .fr, .de) against two fake
//	          vendors whose finds differ by segment, profile and email, bulk on and
//	          off: units per matched row of auto (right after one learning job) ÷
//	          that of the best order per segment and of the best fixed order, each
//	          measured (waterfall.go)
//	growth    one tenant grown through the pipeline to each of -growth-sizes rows
//	          (100,000 and 1,000,000): status and feed p99, a fresh upload and its
//	          download right after it finished, an erasure, another tenant's
//	          retention purge with the polls during it, an idle sweep round, a
//	          deep page; a table of its own, each figure beside its first size's
//	          (growth.go)
//
// It prints one table and writes it as JSON (-out) for comparison between
// commits. Timings depend on the machine and on what else runs on it: the
// table records the machine and its load average, and -repeat N reports the
// best of N runs with the spread.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// allScenarios in the order they run.
var allScenarios = []string{"seed", "ceiling", "ingest", "polling", "slowuploads", "manyjobs", "waterfall", "growth"}

type options struct {
	bin         string
	scenarios   []string
	scale       float64
	repeat      int
	out         string
	logDir      string
	profileDir  string
	keep        bool
	databaseURL string
	redisURL    string
	logLevel    string
	timeout     time.Duration
	pollRate    float64
	smallJobs   int
	smallRows   int
	psql        string
	settle      time.Duration
	locale      string
	// ingestFormats are the ingest scenario's formats besides the CSV.
	ingestFormats []string
	xlsxMemLimit  string
	ingestCSV     bool
	ingestAtOnce  int
	// growthSizes are the rows the growth scenario grows its tenant to, in
	// order (scaled).
	growthSizes []int
}

// bench is one run of the benchmark.
type bench struct {
	opts   options
	runID  string
	runSeq int
	out    io.Writer
	report *report
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarios := fs.String("scenario", "all", "scenarios to run, comma-separated: "+strings.Join(allScenarios, ", ")+", or all")
	fs.StringVar(&o.bin, "bin", "bin", "directory holding the api, worker, scheduler and fakevendor binaries (make dev)")
	fs.Float64Var(&o.scale, "scale", 1, "multiply every scenario's size by this (0.1: a tenth); the targets are for 1")
	fs.IntVar(&o.repeat, "repeat", 1, "run each scenario this many times; the table shows the best run and the spread")
	fs.StringVar(&o.out, "out", "bench.json", "write the table as JSON here (\"\": do not)")
	fs.StringVar(&o.logDir, "logs", ".data/bench", "where the processes' logs, generated files and profiles go")
	fs.StringVar(&o.profileDir, "profile", "", "write CPU profiles here: with the ceiling scenario, the worker's (30 s or the job) during an extra ceiling run (worker.cpu.pprof); with the ingest scenario, the API's over its last CSV upload (api.ingest.cpu.pprof)")
	fs.BoolVar(&o.keep, "keep", false, "keep the scenarios' databases (enrichq_bench_*) for inspection")
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level of the started processes")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up on one scenario run after this long")
	fs.Float64Var(&o.pollRate, "poll-rate", 200, "polling scenario: status polls per second")
	fs.IntVar(&o.smallJobs, "small-jobs", 50, "manyjobs scenario: small jobs submitted (scaled)")
	fs.IntVar(&o.smallRows, "small-rows", 100, "manyjobs scenario: rows of each small job")
	formats := fs.String("ingest-formats", strings.Join(ingestFormats, ","), "ingest scenario: formats uploaded after the CSV, comma-separated: "+strings.Join(ingestFormats, ", ")+` ("" for none)`)
	fs.BoolVar(&o.ingestCSV, "ingest-csv", true, "ingest scenario: upload the plain CSV (false: only -ingest-formats)")
	fs.IntVar(&o.ingestAtOnce, "ingest-at-once", 4, "ingest scenario: after the .xlsx alone, the same file uploaded this many times at once by up to three tenants (1 to 8; 1: not at once): the API's peak RSS under concurrent uploads")
	fs.StringVar(&o.xlsxMemLimit, "xlsx-memlimit", "", `ingest scenario: a GOMEMLIMIT for the API in the .xlsx run, e.g. 150MiB ("": Go's defaults, as enrichq runs unless told)`)
	sizes := fs.String("growth-sizes", "100000,1000000", "growth scenario: the rows its tenant is grown to, in order, comma-separated (scaled)")
	fs.StringVar(&o.psql, "psql", "psql", "psql binary for the ingest baseline (\\copy)")
	fs.StringVar(&o.locale, "locale", "", `create the scenarios' databases with this locale (from template0), e.g. en_US.UTF-8 as the official postgres image's; "" takes the server's default`)
	fs.DurationVar(&o.settle, "settle", 30*time.Second, "before each run, wait at most this long for a second in which the CPUs are 90 % idle (0: do not wait)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.scale <= 0 || o.repeat < 1 {
		return errors.New("-scale must be positive and -repeat at least 1")
	}
	for _, f := range strings.Split(*formats, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if !slices.Contains(ingestFormats, f) {
			return fmt.Errorf("-ingest-formats: unknown %q (want %s)", f, strings.Join(ingestFormats, ", "))
		}
		o.ingestFormats = append(o.ingestFormats, f)
	}
	if o.ingestAtOnce < 1 || o.ingestAtOnce > 8 {
		return fmt.Errorf("-ingest-at-once: %d, want 1 to 8", o.ingestAtOnce)
	}
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || (len(o.growthSizes) > 0 && n <= o.growthSizes[len(o.growthSizes)-1]) {
			return fmt.Errorf("-growth-sizes: %q is not a list of growing row counts", *sizes)
		}
		o.growthSizes = append(o.growthSizes, n)
	}
	if *scenarios == "all" || *scenarios == "" {
		o.scenarios = allScenarios
	} else {
		for _, s := range strings.Split(*scenarios, ",") {
			s = strings.TrimSpace(s)
			if !contains(allScenarios, s) {
				return fmt.Errorf("-scenario: unknown %q (want %s or all)", s, strings.Join(allScenarios, ", "))
			}
			o.scenarios = append(o.scenarios, s)
		}
	}
	o.databaseURL = or(getenv("DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/enrichq?sslmode=disable")
	o.redisURL = or(getenv("REDIS_URL"), "redis://127.0.0.1:6379/0")
	if err := os.MkdirAll(o.logDir, 0o755); err != nil {
		return err
	}

	b := &bench{opts: o, runID: time.Now().UTC().Format("20060102t150405"), out: stderr}
	b.report = newReport(o)
	b.logf("enrichq bench %s: scenarios %s, scale %g, repeat %d; %d CPUs, load average %s; logs in %s",
		b.runID, strings.Join(o.scenarios, ","), o.scale, o.repeat, runtime.NumCPU(), loadAvg(), o.logDir)
	for _, name := range o.scenarios {
		if ctx.Err() != nil {
			break // interrupted: print what was measured
		}
		if err := b.runScenario(ctx, name); err != nil {
			// One scenario failing is a row of the table, not the end of the run.
			b.logf("%s: %v", name, err)
			b.report.fail(name, err)
		}
	}
	if o.profileDir != "" && contains(o.scenarios, "ceiling") && ctx.Err() == nil {
		if err := b.profileCeiling(ctx); err != nil {
			b.logf("profile: %v", err)
		}
	}
	b.report.finish()
	b.report.print(stdout)
	if o.out != "" {
		if err := b.report.writeJSON(o.out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nwritten to %s\n", o.out)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if n := b.report.errors(); n > 0 {
		return fmt.Errorf("%d scenario run(s) failed; see the table and the logs in %s", n, o.logDir)
	}
	return nil
}

func (b *bench) runScenario(ctx context.Context, name string) error {
	switch name {
	case "seed":
		return b.seed(ctx)
	case "ceiling":
		return b.ceiling(ctx)
	case "ingest":
		return b.ingest(ctx)
	case "polling":
		return b.polling(ctx)
	case "slowuploads":
		return b.slowUploads(ctx)
	case "waterfall":
		return b.waterfall(ctx)
	case "manyjobs":
		return b.manyJobs(ctx)
	case "growth":
		return b.growth(ctx)
	}
	return fmt.Errorf("unknown scenario %q", name)
}

// scaled is n times -scale, at least lo.
func (b *bench) scaled(n, lo int) int {
	return max(lo, int(float64(n)*b.opts.scale+0.5))
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.out, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// deleteQueue removes a scenario's asynq queue from Redis.
func (b *bench) deleteQueue(queue string) {
	opt, err := asynq.ParseRedisURI(b.opts.redisURL)
	if err != nil {
		return
	}
	in := asynq.NewInspector(opt)
	defer in.Close()
	_ = in.DeleteQueue(queue, true)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
