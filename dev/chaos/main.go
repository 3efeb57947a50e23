// Command chaos runs enrichq's real binaries (from -bin: the fake vendor with
// faults on, the API, two workers, the scheduler) and injects faults one
// after another, each while a job of -rows lookups of its own runs: worker
// SIGKILL, Redis FLUSHALL, a Postgres restart (every connection cut through
// a TCP proxy; the server itself is not touched), a vendor 429 storm, vendor
// faults (503s, malformed answers, answers slower than the client timeout,
// connection resets), poison rows, a worker SIGTERM, and a client retrying a
// submit with the same Idempotency-Key. It then checks, from Postgres and
// from the fake vendor's ledger, that every row is terminal, none lost, no
// input paid twice and every credit accounted for, and prints one line per
// fault. It exits 1 when an invariant does not hold.
//
//	make dev && bin/chaos                         # every fault
//	bin/chaos -faults sigkill,redis-flush -rows 4000
//
// It needs Postgres (DATABASE_URL: it creates a database of its own there
// and drops it at the end) and redis-server on PATH (it runs a private one,
// so FLUSHALL touches nobody's data; without one, an in-process miniredis).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (bool, error) {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	// The faults share one system; each scenario gets one of its own.
	var shared []string
	var scenarios []options
	for _, f := range o.faults {
		if scenario(f) {
			scenarios = append(scenarios, scenarioOptions(o, f))
		} else {
			shared = append(shared, f)
		}
	}
	allOK := true
	if len(shared) > 0 {
		so := o
		so.faults = shared
		ok, err := runSystem(ctx, so, getenv, stdout)
		if err != nil {
			return false, err
		}
		allOK = allOK && ok
	}
	for _, so := range scenarios {
		fmt.Fprintln(stdout)
		ok, err := runSystem(ctx, so, getenv, stdout)
		if err != nil {
			return false, err
		}
		allOK = allOK && ok
	}
	return allOK, nil
}

// runSystem starts a system, injects o's faults and checks, and tears it down.
func runSystem(ctx context.Context, o options, getenv func(string) string, stdout io.Writer) (bool, error) {
	e, err := setup(ctx, o, getenv, stdout)
	if err != nil {
		return false, err
	}
	defer e.teardown(stdout)
	return e.runFaults(ctx, stdout)
}

// scenarioOptions are the options of the system scenario f runs against.
func scenarioOptions(o options, f string) options {
	o.faults = []string{f}
	switch f {
	case chargedMisses:
		// A vendor that keeps to the contract, prices by outcome and charges
		// its misses: it honours Idempotency-Key, reports X-Credits-Charged
		// and X-Credits-Remaining on every answer (on a broken body too), marks
		// no replay; 5 % of calls 503 (charged 0), 1 % a broken body
		// (charged); 60 ms +- 30. Single lookups.
		o.prices = "charged-misses"
		o.noReplayHdr = true
		o.baseFaults = "fail=0.05,malformed=0.01"
		o.latency = 60 * time.Millisecond
		o.vendorRPS = o.scenarioRPS
		o.bulk = false
		o.rows = o.scenarioRows
	}
	return o
}
