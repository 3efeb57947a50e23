package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/enrichq/enrichq/dev/chaos/rig"
	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/jobs"
)

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
