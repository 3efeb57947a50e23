package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/enrichq/enrichq/dev/chaos/rig"
	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/jobs"
)

// phase is one fault and the job it runs against.
type phase struct {
	name, title string
	jobID       string
	expected    int
	started     time.Time
	took        time.Duration
	finished    bool // the job reached a final state in time
	detail      []string
	problems    []string // fault-specific expectations that failed
	figures     rig.Figures
	post        func(ph *phase) // adds figure-dependent details once the figures are in
}

func (ph *phase) note(format string, args ...any) {
	ph.detail = append(ph.detail, fmt.Sprintf(format, args...))
}
func (ph *phase) fail(format string, args ...any) {
	ph.problems = append(ph.problems, fmt.Sprintf(format, args...))
}

func title(name string, o options) string {
	switch name {
	case "sigkill":
		return fmt.Sprintf("worker SIGKILL x%d", o.kills)
	case "redis-flush":
		return "redis FLUSHALL"
	case "pg-restart":
		return "postgres restart"
	case "429-storm":
		return "vendor 429 storm"
	case "vendor-faults":
		return "vendor faults"
	case "poison":
		return "poison rows"
	case "sigterm":
		return "worker SIGTERM"
	case "idempotent-submit":
		return "submit retried"
	case chargedMisses:
		return "charged misses"
	}
	return name
}

func (e *env) runFaults(ctx context.Context, stdout io.Writer) (bool, error) {
	var phases []*phase
	for _, name := range e.o.faults {
		ph := &phase{name: name, title: title(name, e.o), started: time.Now()}
		phases = append(phases, ph)
		fmt.Fprintf(stdout, "chaos: %s ...\n", ph.title)
		if err := e.runPhase(ctx, ph); err != nil {
			if ctx.Err() != nil {
				return false, err
			}
			ph.fail("%v", err)
		}
		ph.took = time.Since(ph.started)
		state := "not finished"
		if ph.finished {
			state = "finished"
		}
		fmt.Fprintf(stdout, "chaos: %s done: job %s %s in %.1fs\n", ph.title, ph.jobID, state, ph.took.Seconds())
	}

	// Calls cut by killed workers hold reservations until their expiry
	// (lease + 1m), when the scheduler counts them as spent: wait for that,
	// so that the books are closed.
	if err := e.waitReservations(ctx, stdout); err != nil {
		return false, err
	}
	ledger, err := rig.VendorLedger(ctx, e.vendorURL)
	if err != nil {
		return false, err
	}
	fmt.Fprintln(stdout)
	allOK := true
	width := 0
	for _, ph := range phases {
		width = max(width, len(ph.title))
	}
	var rows, lost, double int
	for _, ph := range phases {
		if ph.jobID == "" {
			fmt.Fprintf(stdout, "%-*s  no job: %s\n", width+1, ph.title+":", strings.Join(ph.problems, "; "))
			allOK = false
			continue
		}
		f, err := rig.CheckJob(ctx, e.db, ph.jobID, ph.expected, ledger.Entries)
		if err != nil {
			return false, err
		}
		ph.figures = f
		if ph.post != nil {
			ph.post(ph)
		}
		rows += f.Stored
		lost += f.Lost
		double += f.DoubleCharged
		ok := f.OK() && len(ph.problems) == 0
		allOK = allOK && ok
		fmt.Fprintf(stdout, "%-*s  %s\n", width+1, ph.title+":", f.Line())
		for _, d := range ph.detail {
			fmt.Fprintf(stdout, "%*s  %s\n", width+1, "", d)
		}
		for _, d := range describe(f) {
			fmt.Fprintf(stdout, "%*s  %s\n", width+1, "", d)
		}
		for _, p := range ph.problems {
			fmt.Fprintf(stdout, "%*s  FAIL: %s\n", width+1, "", p)
		}
	}
	if lost := e.failedSettlements(); len(lost) > 0 {
		fmt.Fprintf(stdout, "%-*s  %s\n", width+1, "workers:", "ledger updates that failed (the settlement is lost; the reservation is counted at expiry): "+strings.Join(lost, ", "))
	}
	t, err := rig.CheckTotals(ctx, e.db, ledger.Entries)
	if err != nil {
		return false, err
	}
	line := fmt.Sprintf("%d rows in %d jobs, %d lost, %d double-charged, credits %d (of which %d of unknown outcome) against vendor %d",
		rows, len(phases), lost, double, t.Ours, t.Unknown, t.Vendor)
	if t.Orphan > 0 {
		line += fmt.Sprintf("; %d credits billed in %d calls enrichq has no ledger row of", t.Orphan, t.OrphanCalls)
		allOK = false
	}
	if t.Reserved > 0 {
		line += fmt.Sprintf("; %d credits still reserved", t.Reserved)
	}
	fmt.Fprintf(stdout, "%-*s  %s\n", width+1, "all:", line)
	if days, err := e.db.AccountDrift(ctx, config.VendorAccount(vendorKey), time.Now(), time.Now()); err == nil {
		for _, d := range days {
			fmt.Fprintf(stdout, "%-*s  %s: ledger %d, the vendor's balance readings show %d billed (%d readings): drift %d\n",
				width+1, "drift:", d.Day.Format(time.DateOnly), d.LedgerSpent, d.VendorBilled, d.Readings, d.Drift.Drift)
		}
	}
	if allOK {
		fmt.Fprintln(stdout, "chaos: every invariant holds")
	} else {
		e.failed = true
		fmt.Fprintln(stdout, "chaos: FAILED: see the lines above and the logs in", e.dir)
	}
	return allOK, nil
}

// describe explains figures that are not clean.
func describe(f rig.Figures) []string {
	var out []string
	if f.State != "completed" {
		out = append(out, fmt.Sprintf("job %s (%s)", f.State, f.Reason))
	}
	if f.Lost > 0 {
		out = append(out, fmt.Sprintf("lost: %d open (%v), %d never stored", f.Open, openStates(f.States), f.Missing))
	}
	if n := f.States["failed"]; n > 0 {
		var rs []string
		for r, k := range f.FailedReasons {
			rs = append(rs, fmt.Sprintf("%d %q", k, r))
		}
		sort.Strings(rs)
		out = append(out, fmt.Sprintf("failed rows: %d (%s)", n, strings.Join(rs, ", ")))
	}
	if f.DoubleCharged > 0 {
		var cs []string
		for c, k := range f.DoubleCauses {
			cs = append(cs, fmt.Sprintf("%d after %s", k, c))
		}
		sort.Strings(cs)
		out = append(out, fmt.Sprintf("double-charged: %d inputs billed %d extra times: %s; e.g. %s",
			f.DoubleCharged, f.ExtraBillings, strings.Join(cs, ", "), strings.Join(f.DoubleSamples, " | ")))
	}
	if f.Unexplained != 0 {
		out = append(out, fmt.Sprintf("unexplained credits %d, keys %v", f.Unexplained, f.UnexplainedKeys))
	}
	return out
}

func openStates(s map[string]int) string {
	return fmt.Sprintf("pending %d, in_flight %d, retry_wait %d", s["pending"], s["in_flight"], s["retry_wait"])
}

// runPhase submits the phase's job, injects its fault while the job runs,
// and waits for the job to end.
func (e *env) runPhase(ctx context.Context, ph *phase) error {
	switch ph.name {
	case "idempotent-submit":
		if err := e.retriedSubmit(ctx, ph); err != nil {
			return err
		}
		return e.waitJob(ctx, ph)
	case "poison":
		if err := e.submit(ctx, ph, e.o.poisonRows); err != nil {
			return err
		}
		if err := e.waitJob(ctx, ph); err != nil {
			return err
		}
		return e.checkPoison(ctx, ph)
	case chargedMisses:
		return e.chargedMisses(ctx, ph)
	case "vendor-faults":
		s0, _ := e.vendorStats(ctx)
		hf, _ := parseFaults(e.o.harderFaults, e.o.vendorTimeout)
		bf, _ := parseFaults(e.o.baseFaults, e.o.vendorTimeout)
		if err := e.setVendorFaults(ctx, hf); err != nil {
			return err
		}
		defer func() { _ = e.setVendorFaults(context.WithoutCancel(ctx), bf) }()
		if err := e.submit(ctx, ph, 0); err != nil {
			return err
		}
		rss := e.sampleRSS(ctx)
		err := e.waitJob(ctx, ph)
		peak := rss()
		s1, _ := e.vendorStats(ctx)
		ph.note("vendor at %s: %d calls, %d answered 503, %d reset, %d replayed; workers' peak RSS %s",
			hf, s1.Requests-s0.Requests, s1.ByStatus["503"]-s0.ByStatus["503"], s1.Resets-s0.Resets, s1.Replays-s0.Replays, peak)
		ph.post = func(ph *phase) {
			ph.note("most attempts of a row: %d of %d", ph.figures.MaxAttempts, jobs.DefaultMaxAttempts)
		}
		return err
	}
	if err := e.submit(ctx, ph, 0); err != nil {
		return err
	}
	var err error
	switch ph.name {
	case "sigkill":
		err = e.sigkill(ctx, ph)
	case "redis-flush":
		err = e.redisFlush(ctx, ph)
	case "pg-restart":
		err = e.pgRestart(ctx, ph)
	case "429-storm":
		err = e.storm(ctx, ph)
	case "sigterm":
		err = e.sigterm(ctx, ph)
	}
	if err != nil {
		return err
	}
	return e.waitJob(ctx, ph)
}
