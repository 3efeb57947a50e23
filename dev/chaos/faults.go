package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/enrichq/enrichq/dev/chaos/rig"
	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
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

// uploadCSV is n unique lookups tagged with the phase: a fifth by profile
// URL, a fifth by email, the rest companies (one role each); the first
// poisonRows companies carry the fake vendor's reject substring.
func uploadCSV(tag string, n, poisonRows int) []byte {
	var b bytes.Buffer
	b.WriteString("ref,company,profile_url,email,crm_owner\n")
	companies := 0
	for i := range n {
		ref := fmt.Sprintf("%s-%05d", tag, i)
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "%s,,https://platform.example/in/%s-person-%d,,owner-%d\n", ref, tag, i, i%7)
		case 1:
			fmt.Fprintf(&b, "%s,,,person%d@%s-co%d.example,owner-%d\n", ref, i, tag, i, i%7)
		default:
			name := fmt.Sprintf("%s Company %d GmbH", strings.ToUpper(tag[:1])+tag[1:], i)
			if companies < poisonRows {
				name = poison + " " + name
			}
			companies++
			fmt.Fprintf(&b, "%s,%s,,,owner-%d\n", ref, name, i%7)
		}
	}
	return b.Bytes()
}

// companiesCSV is n unique companies tagged with the phase (one role each
// by the job's roles): every lookup a search by name and company.
func companiesCSV(tag string, n int) []byte {
	var b bytes.Buffer
	b.WriteString("ref,company\n")
	for i := range n {
		fmt.Fprintf(&b, "%s-%05d,%s Company %d GmbH\n", tag, i, strings.ToUpper(tag[:1])+tag[1:], i)
	}
	return b.Bytes()
}

func (e *env) submitPath(ph *phase) string {
	q := url.Values{"name": {"chaos: " + ph.title}, "roles": {"VP Sales"}, "lookups": {e.o.lookups}}
	return "/v1/jobs?" + q.Encode()
}

func (e *env) submit(ctx context.Context, ph *phase, poisonRows int) error {
	body := uploadCSV(e.tag(ph), e.o.rows, poisonRows)
	if ph.name == chargedMisses {
		body = companiesCSV(e.tag(ph), e.o.rows)
	}
	st, data, err := httpDo(ctx, http.MethodPost, e.apiURL+e.submitPath(ph), "text/csv", body,
		map[string]string{"Authorization": "Bearer " + apiKey}, time.Minute)
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	if st != http.StatusCreated {
		return fmt.Errorf("submit: %d %s", st, strings.TrimSpace(string(data)))
	}
	var js struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &js); err != nil {
		return err
	}
	ph.jobID, ph.expected = js.ID, e.o.rows
	return nil
}

func (e *env) tag(ph *phase) string {
	return strings.ReplaceAll(ph.name, "-", "") + e.stamp[len(e.stamp)-6:]
}

// progress is where a job stands.
type progress struct {
	state                     string
	finished                  bool
	total, terminal, inFlight int
	pending, retryWait        int
}

func (e *env) progress(ctx context.Context, jobID string) (progress, error) {
	job, err := e.db.JobByID(ctx, jobID)
	if err != nil {
		return progress{}, err
	}
	counts, err := e.db.RowCounts(ctx, jobID)
	if err != nil {
		return progress{}, err
	}
	p := progress{state: string(job.State), finished: job.FinishedAt != nil,
		inFlight: counts[domain.RowInFlight], pending: counts[domain.RowPending], retryWait: counts[domain.RowRetryWait]}
	for state, n := range counts {
		p.total += n
		if !state.Open() {
			p.terminal += n
		}
	}
	return p, nil
}

func (p progress) done() bool {
	return p.state != "queued" && p.state != "running" || p.finished
}

func (p progress) pct() float64 {
	if p.total == 0 {
		return 0
	}
	return 100 * float64(p.terminal) / float64(p.total)
}

// poll calls cond every 50 ms until it says true, within the bound.
func poll(ctx context.Context, within time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// waitMid waits until the job is mid-run: at least frac of its rows
// terminal and some in flight. It reports false when the job ended first.
func (e *env) waitMid(ctx context.Context, ph *phase, frac float64) (progress, bool, error) {
	var p progress
	err := poll(ctx, e.o.phaseTimeout, func() (bool, error) {
		var err error
		p, err = e.progress(ctx, ph.jobID)
		return err == nil && (p.done() || float64(p.terminal) >= frac*float64(p.total) && p.inFlight > 0), err
	})
	if err != nil {
		return p, false, fmt.Errorf("waiting for the job to be mid-run: %w", err)
	}
	if p.done() {
		ph.fail("the job ended before the fault could be injected: raise -rows or lower -vendor-rps")
		return p, false, nil
	}
	return p, true, nil
}

// waitJob waits for the phase's job to end (completed, paused, canceled).
func (e *env) waitJob(ctx context.Context, ph *phase) error {
	err := poll(ctx, e.o.phaseTimeout, func() (bool, error) {
		p, err := e.progress(ctx, ph.jobID)
		return err == nil && p.done(), err
	})
	if err != nil {
		p, _ := e.progress(ctx, ph.jobID)
		ph.fail("the job did not end within %s: %s, %d/%d rows terminal", e.o.phaseTimeout, p.state, p.terminal, p.total)
		return nil
	}
	ph.finished = true
	e.moneyAtCompletion(ctx, ph)
	return nil
}

// moneyAtCompletion checks a job's books the moment it reports completed:
// its spend is the vendor's bill for its keys, to the credit, with nothing
// reserved, and it sets the ledger beside the vendor's balance readings.
func (e *env) moneyAtCompletion(ctx context.Context, ph *phase) {
	p, err := e.progress(ctx, ph.jobID)
	if err != nil || p.state != "completed" {
		return
	}
	ledger, err := rig.VendorLedger(ctx, e.vendorURL)
	if err != nil {
		ph.fail("the vendor's ledger at completion: %v", err)
		return
	}
	f, err := rig.CheckJob(ctx, e.db, ph.jobID, ph.expected, ledger.Entries)
	if err != nil {
		ph.fail("the job's books at completion: %v", err)
		return
	}
	if f.JobSpent != f.Vendor || f.JobReserved != 0 {
		ph.fail("at completion: spent %d, %d reserved, the vendor billed %d", f.JobSpent, f.JobReserved, f.Vendor)
	} else {
		ph.note("at completion: spent %d = the vendor's bill %d, nothing reserved", f.JobSpent, f.Vendor)
	}
	if d, err := e.db.JobDrift(ctx, ph.jobID); err == nil {
		ph.note("balance witness: ledger %d, the vendor's X-Credits-Remaining readings show %d billed (%d readings): drift %d",
			d.LedgerSpent, d.VendorBilled, d.Readings, d.Drift)
	}
}

func (e *env) waitReservations(ctx context.Context, stdout io.Writer) error {
	count := func() (int, error) { return e.db.OpenReservations(ctx) }
	n, err := count()
	if err != nil || n == 0 {
		return err
	}
	bound := jobs.DefaultLease + time.Minute + 15*time.Second
	fmt.Fprintf(stdout, "chaos: %d reservations are still open (calls cut short by a killed worker or a lost connection, or still under way); waiting up to %s for them to close\n", n, bound.Round(time.Second))
	start := time.Now()
	err = poll(ctx, bound, func() (bool, error) {
		n, err := count()
		return n == 0, err
	})
	if err != nil && ctx.Err() != nil {
		return err
	}
	if err == nil {
		fmt.Fprintf(stdout, "chaos: every reservation closed after %.0fs\n", time.Since(start).Seconds())
	}
	return nil
}

// --- the faults ---

// chargedMisses runs issue 30's scenario against a vendor that prices by
// outcome and charges its misses: a worker SIGKILLed 3 s after the submit,
// Redis flushed at 5 s, a new worker started in the killed one's place. The
// lost calls are settled by the prices the vendor's answers showed (and the
// balance witness), so that the job's spend is the bill when it completes.
func (e *env) chargedMisses(ctx context.Context, ph *phase) error {
	t0 := time.Now()
	if err := e.submit(ctx, ph, 0); err != nil {
		return err
	}
	at := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(t0.Add(d))):
			return nil
		}
	}
	if err := at(3 * time.Second); err != nil {
		return err
	}
	p, err := e.progress(ctx, ph.jobID)
	if err != nil {
		return err
	}
	if p.done() {
		ph.fail("the job ended before the worker could be killed: raise -charged-misses-rows or lower -charged-misses-rps")
	}
	e.workers[0].Kill()
	if err := at(5 * time.Second); err != nil {
		return err
	}
	q, _ := e.progress(ctx, ph.jobID)
	before, _ := e.asynqTasks(ctx)
	if err := e.rdb.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("FLUSHALL: %w", err)
	}
	if err := e.startWorker(ctx, 0); err != nil {
		return fmt.Errorf("a new worker: %w", err)
	}
	ph.note("worker 1 SIGKILLed at 3s (%.0f%% of rows terminal, %d claimed), FLUSHALL at 5s (%.0f%%, %d tasks lost), a new worker started",
		p.pct(), p.inFlight, q.pct(), before)
	if err := e.waitJob(ctx, ph); err != nil {
		return err
	}
	e.noteInferred(ctx, ph)
	e.notePrices(ctx, ph)
	return nil
}

// noteInferred adds how the job's lost calls were settled: by the price of
// their replayed answer, at 0 by a fresh answer, by the balance witness.
func (e *env) noteInferred(ctx context.Context, ph *phase) {
	entries, err := e.db.LedgerEntries(ctx, ph.jobID)
	if err != nil {
		ph.note("lost calls: %v", err)
		return
	}
	byReplay := map[int64]int{}
	var fresh, witnessed int
	for _, le := range entries {
		switch {
		case strings.HasPrefix(le.Error, "settled by the balance witness"):
			witnessed++
		case strings.Contains(le.Error, "replayed this Idempotency-Key"):
			byReplay[le.Charged]++
		case strings.Contains(le.Error, "afresh"):
			fresh++
		}
	}
	var prices []string
	for c, n := range byReplay {
		prices = append(prices, fmt.Sprintf("%d at %d", n, c))
	}
	sort.Strings(prices)
	ph.note("lost calls settled by their replay's learned price: %s; at 0 by a fresh answer: %d; by the balance witness: %d",
		cmp.Or(strings.Join(prices, ", "), "none"), fresh, witnessed)
}

// notePrices adds the vendor key's learned price list to the phase's lines.
func (e *env) notePrices(ctx context.Context, ph *phase) {
	list, err := e.db.VendorPrices(ctx, config.VendorAccount(vendorKey))
	if err != nil {
		ph.note("learned prices: %v", err)
		return
	}
	var parts []string
	for _, p := range list {
		s := fmt.Sprintf("%s %d (%d answers)", p.Class, p.Credits, p.Answers)
		if p.Previous != nil {
			s += fmt.Sprintf(", was %d", *p.Previous)
		}
		parts = append(parts, s)
	}
	ph.note("learned prices: %s", strings.Join(parts, "; "))
}

func (e *env) sigkill(ctx context.Context, ph *phase) error {
	var held []string
	for i := range e.o.kills {
		p, mid, err := e.waitMid(ctx, ph, 0.1*float64(i+1))
		if err != nil || !mid {
			return err
		}
		w := i % len(e.workers)
		e.workers[w].Kill()
		held = append(held, fmt.Sprintf("%d", p.inFlight))
		if err := e.startWorker(ctx, w); err != nil {
			return fmt.Errorf("restart worker %d: %w", w+1, err)
		}
		// Let the job move before the next kill.
		_ = poll(ctx, 30*time.Second, func() (bool, error) {
			q, err := e.progress(ctx, ph.jobID)
			return err == nil && (q.done() || q.terminal > p.terminal), err
		})
	}
	ph.note("killed %d times (worker 1, 2, 1...) with %s rows in flight (both workers'), each restarted at once",
		e.o.kills, strings.Join(held, ", "))
	ph.post = func(ph *phase) {
		f := ph.figures
		ph.note("%d rows came back after their lease expired; %d reservations of cut calls counted as spent by the scheduler",
			f.LeaseExpired, f.ExpiredReservations)
	}
	return nil
}

// asynqTasks counts the tasks of our queue in Redis.
func (e *env) asynqTasks(ctx context.Context) (int, error) {
	n := 0
	iter := e.rdb.Scan(ctx, 0, "asynq:{"+e.queue+"}:t:*", 1000).Iterator()
	for iter.Next(ctx) {
		n++
	}
	return n, iter.Err()
}

func (e *env) redisFlush(ctx context.Context, ph *phase) error {
	p, mid, err := e.waitMid(ctx, ph, 0.25)
	if err != nil || !mid {
		return err
	}
	before, _ := e.asynqTasks(ctx)
	if err := e.rdb.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("FLUSHALL: %w", err)
	}
	t0 := time.Now()
	var back time.Duration
	err = poll(ctx, e.o.phaseTimeout, func() (bool, error) {
		n, err := e.asynqTasks(ctx)
		if err == nil && n > 0 && back == 0 {
			back = time.Since(t0)
		}
		q, perr := e.progress(ctx, ph.jobID)
		return back > 0 || (perr == nil && q.done()), errors.Join(err, perr)
	})
	if err != nil {
		return err
	}
	if back > 0 {
		ph.note("FLUSHALL at %.0f%% lost %d tasks; the scheduler found the work in Postgres and re-enqueued it %.1fs later",
			p.pct(), before, back.Seconds())
	} else {
		ph.note("FLUSHALL at %.0f%% lost %d tasks; the job ended without a re-enqueue", p.pct(), before)
	}
	return nil
}

func (e *env) pgRestart(ctx context.Context, ph *phase) error {
	p, mid, err := e.waitMid(ctx, ph, 0.25)
	if err != nil || !mid {
		return err
	}
	cut := e.proxy.Down()
	t0 := time.Now()
	// What a client sees while Postgres is down.
	st, _, rerr := httpDo(ctx, http.MethodGet, e.apiURL+"/readyz", "", nil, nil, 15*time.Second)
	readyTook := time.Since(t0)
	t1 := time.Now()
	sst, sbody, serr := httpDo(ctx, http.MethodPost, e.apiURL+"/v1/jobs", "text/csv",
		[]byte("profile_url\nhttps://platform.example/in/during-outage\n"), map[string]string{"Authorization": "Bearer " + apiKey}, 30*time.Second)
	submitTook := time.Since(t1)
	if rest := e.o.pgDown - time.Since(t0); rest > 0 {
		time.Sleep(rest)
	}
	if err := e.proxy.Up(); err != nil {
		return err
	}
	up := time.Now()
	var readyAgain time.Duration
	if err := waitReady(ctx, e.apiURL, time.Minute); err == nil {
		readyAgain = time.Since(up)
	} else {
		ph.fail("the API is not ready a minute after Postgres came back")
	}
	q0, _ := e.progress(ctx, ph.jobID)
	var resumed time.Duration
	_ = poll(ctx, e.o.phaseTimeout, func() (bool, error) {
		q, err := e.progress(ctx, ph.jobID)
		if err == nil && (q.terminal > q0.terminal || q.done()) {
			resumed = time.Since(up)
			return true, nil
		}
		return false, err
	})
	desc := func(st int, err error, took time.Duration) string {
		if err != nil {
			return fmt.Sprintf("error %v after %.1fs", err, took.Seconds())
		}
		return fmt.Sprintf("%d in %.2fs", st, took.Seconds())
	}
	ph.note("Postgres unreachable for %s at %.0f%% (%d connections cut): /readyz %s, a submit %s; ready again %.1fs after, rows finishing again %.1fs after",
		e.o.pgDown, p.pct(), cut, desc(st, rerr, readyTook), desc(sst, serr, submitTook), readyAgain.Seconds(), resumed.Seconds())
	if rerr == nil && st != http.StatusServiceUnavailable {
		ph.fail("/readyz answered %d while Postgres was down, want 503", st)
	}
	if serr == nil && sst/100 != 5 {
		ph.fail("a submit answered %d while Postgres was down: %s", sst, bytes.TrimSpace(sbody))
	}
	if serr == nil && sst != http.StatusServiceUnavailable {
		ph.note("note: the submit during the outage answered %d (%s), not 503 with Retry-After", sst, strings.TrimSpace(string(sbody)))
	}
	ph.post = func(ph *phase) {
		ph.note("%d rows came back after their lease expired; %d reservations counted as spent by the scheduler",
			ph.figures.LeaseExpired, ph.figures.ExpiredReservations)
	}
	return nil
}

func (e *env) storm(ctx context.Context, ph *phase) error {
	p, mid, err := e.waitMid(ctx, ph, 0.2)
	if err != nil || !mid {
		return err
	}
	s0, err := e.vendorStats(ctx)
	if err != nil {
		return err
	}
	if err := e.setVendorFaults(ctx, map[string]any{"rps": e.o.stormRPS, "burst": 1}); err != nil {
		return err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(e.o.storm):
	}
	if err := e.setVendorFaults(ctx, map[string]any{"rps": e.o.vendorRPS, "burst": 2}); err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	s1, err := e.vendorStats(ctx)
	if err != nil {
		return err
	}
	calls := s1.Requests - s0.Requests
	n429 := s1.ByStatus["429"] - s0.ByStatus["429"]
	ph.note("vendor limited to %g req/s for %s at %.0f%%: %d calls (%.1f/s against a configured %g/s), %d answered 429",
		e.o.stormRPS, e.o.storm, p.pct(), calls, float64(calls)/secs, e.o.vendorRPS, n429)
	if float64(calls)/secs > 1.5*e.o.vendorRPS {
		ph.fail("retry storm: %.1f calls/s during the 429 storm, over 1.5x the configured %g/s", float64(calls)/secs, e.o.vendorRPS)
	}
	return nil
}

func (e *env) sigterm(ctx context.Context, ph *phase) error {
	p, mid, err := e.waitMid(ctx, ph, 0.25)
	if err != nil || !mid {
		return err
	}
	bound := e.o.shutdownTimeout + 5*time.Second
	took, clean := e.workers[0].Term(bound)
	// The calls whose reservation is open when the worker is gone: its own
	// cut calls are among them (the other worker's settle in a moment).
	open := map[int64]bool{}
	if entries, err := e.db.LedgerEntries(ctx, ph.jobID); err == nil {
		for _, le := range entries {
			if le.Status == "reserved" {
				open[le.ID] = true
			}
		}
	}
	exit := "exit 0"
	if !clean {
		exit = fmt.Sprintf("%v", e.workers[0].Err())
	}
	if err := e.startWorker(ctx, 0); err != nil {
		return err
	}
	ph.note("SIGTERM at %.0f%% with %d rows in flight (both workers'): worker 1 stopped in %.1fs (%s; ENRICHQ_SHUTDOWN_TIMEOUT %s)",
		p.pct(), p.inFlight, took.Seconds(), exit, e.o.shutdownTimeout)
	if !clean || took > e.o.shutdownTimeout+2*time.Second {
		ph.fail("the worker did not stop cleanly within its shutdown timeout (%s): %.1fs, %s", e.o.shutdownTimeout, took.Seconds(), exit)
	}
	ph.post = func(ph *phase) {
		f := ph.figures
		var cut int
		entries, _ := e.db.LedgerEntries(context.Background(), ph.jobID)
		for _, le := range entries {
			if open[le.ID] && strings.HasPrefix(le.Error, "reservation expired") {
				cut++
			}
		}
		ph.note("rows it left behind to lease expiry: %d; calls open when it was gone and never settled (counted as spent at expiry): %d of %d",
			f.LeaseExpired, cut, len(open))
		if f.LeaseExpired > 0 || cut > 0 {
			ph.fail("a graceful stop must release the rows it did not start and persist the calls in flight: %d rows waited for their lease, %d calls were not settled",
				f.LeaseExpired, cut)
		}
	}
	return nil
}

func (e *env) checkPoison(ctx context.Context, ph *phase) error {
	var total, rejected, others, maxAtt int
	var reason string
	const page = 1000
	for after := int64(0); ; {
		rows, err := e.db.ListResults(ctx, ph.jobID, "", after, page)
		if err != nil {
			return err
		}
		for _, r := range rows {
			after = r.RowID
			byVendor := strings.HasPrefix(r.StateReason, "vendor rejected")
			if !strings.HasPrefix(r.Company, poison) {
				if byVendor {
					others++
				}
				continue
			}
			if total == 0 {
				reason = r.StateReason
			}
			total++
			maxAtt = max(maxAtt, r.Attempts)
			if r.State == domain.RowFailed && byVendor {
				rejected++
			}
		}
		if len(rows) < page {
			break
		}
	}
	ph.note("%d/%d poison rows failed at once with the vendor's message (%q), retried at most %d times; other rows failed by them: %d",
		rejected, total, reason, maxAtt, others)
	if rejected != total || maxAtt > 0 || others > 0 {
		ph.fail("poison rows: %d of %d rejected, %d retries, %d other rows failed by them", rejected, total, maxAtt, others)
	}
	return nil
}

// retriedSubmit is a client that sends a submit, gives up waiting for the
// answer (a timeout), and sends it again with the same Idempotency-Key,
// twice at once and once more after.
func (e *env) retriedSubmit(ctx context.Context, ph *phase) error {
	key := "chaos-retry-" + e.stamp
	body := uploadCSV(e.tag(ph), e.o.rows, 0)
	path := e.submitPath(ph)
	hdr := map[string]string{"Authorization": "Bearer " + apiKey, "Idempotency-Key": key}

	// The first attempt: the whole request is sent, the answer never read.
	u, _ := url.Parse(e.apiURL)
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nIdempotency-Key: %s\r\nContent-Type: text/csv\r\nContent-Length: %d\r\n\r\n",
		path, u.Host, apiKey, key, len(body))
	_, _ = conn.Write(body)
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	first := "timed out after 20ms"
	if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
		first = "answered " + strconv.Itoa(resp.StatusCode) + " before the client gave up"
		resp.Body.Close()
	}
	conn.Close()

	type answer struct {
		status   int
		id       string
		replayed bool
	}
	var mu sync.Mutex
	var answers []answer
	send := func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.apiURL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "text/csv")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		a := answer{}
		if err == nil {
			var js struct {
				ID string `json:"id"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&js)
			resp.Body.Close()
			a = answer{status: resp.StatusCode, id: js.ID, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
		}
		mu.Lock()
		answers = append(answers, a)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(send)
	}
	wg.Wait()
	send()

	jobs, err := e.db.JobsWithIdempotencyKey(ctx, key)
	if err != nil {
		return err
	}
	var got []string
	ids := map[string]bool{}
	for _, a := range answers {
		s := strconv.Itoa(a.status)
		if a.replayed {
			s += " (replayed)"
		}
		got = append(got, s)
		ids[a.id] = true
	}
	ph.note("first submit %s; 3 retries with the same Idempotency-Key answered %s: %d job(s) stored", first, strings.Join(got, ", "), len(jobs))
	if len(jobs) != 1 {
		ph.fail("%d jobs stored for one Idempotency-Key", len(jobs))
		if len(jobs) == 0 {
			return errors.New("no job stored")
		}
	}
	if len(ids) != 1 || !ids[jobs[0]] {
		ph.fail("the retries named jobs %v, want only %s", ids, jobs[0])
	}
	ph.jobID, ph.expected = jobs[0], e.o.rows
	return nil
}

// sampleRSS samples the workers' resident memory every 200 ms until the
// returned function is called, which returns the peak.
func (e *env) sampleRSS(ctx context.Context) func() string {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var peak int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			for _, w := range e.workers {
				if kb := rssKB(w.Pid()); kb > 0 {
					mu.Lock()
					peak = max(peak, kb)
					mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() string {
		cancel()
		<-done
		if peak == 0 {
			return "unknown"
		}
		return fmt.Sprintf("%.0f MB", float64(peak)/1024)
	}
}

// rssKB reads VmRSS of a process from /proc (Linux); 0 when unknown.
func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// failedSettlements counts the workers' "ledger update failed" log lines by
// error, e.g. "242 deadlock detected (SQLSTATE 40P01)".
func (e *env) failedSettlements() []string {
	counts := map[string]int{}
	for i := range e.workers {
		b, err := os.ReadFile(filepath.Join(e.dir, fmt.Sprintf("worker-%d.log", i+1)))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, `"msg":"ledger update failed"`) {
				continue
			}
			var l struct {
				Err string `json:"err"`
			}
			_ = json.Unmarshal([]byte(line), &l)
			msg := strings.TrimPrefix(l.Err, "ERROR: ")
			if strings.Contains(msg, "connect") || strings.Contains(msg, "connection reset") {
				msg = "Postgres unreachable"
			}
			counts[msg]++
		}
	}
	var out []string
	for m, n := range counts {
		out = append(out, fmt.Sprintf("%d %s", n, m))
	}
	sort.Strings(out)
	return out
}
