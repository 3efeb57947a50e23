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
	e, err := setup(ctx, o, getenv, stdout)
	if err != nil {
		return false, err
	}
	defer e.teardown(stdout)
	return e.runFaults(ctx, stdout)
}
