package jobs

import (
	"context"
	"time"
)

// witness sets a finished job's ledger beside the vendor's balance readings
// (X-Credits-Remaining), and the vendor key's of today: a drift is logged and
// measured, never corrected (docs/money.md, "The second witness").
func (p *Processor) witness(ctx context.Context, jobID string) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	drifts, err := p.store.JobDriftByVendor(sctx, jobID)
	if err != nil {
		p.log.Warn("the job's ledger was not compared with the vendor's balance", "job_id", jobID, "err", err)
		return
	}
	for vendor, d := range drifts {
		if d.Readings == 0 {
			continue
		}
		p.cfg.Metrics.CreditDrift("job", d.Drift)
		if d.Drift != 0 {
			p.log.Warn("credit drift: the job's ledger and the vendor's balance readings disagree", "job_id", jobID, "vendor", vendor,
				"ledger_spent", d.LedgerSpent, "vendor_billed", d.VendorBilled, "drift", d.Drift, "readings", d.Readings)
		}
	}
	now := p.cfg.Now().UTC()
	for _, l := range p.lanes {
		if l.Account != "" {
			p.witnessAccount(sctx, l, now)
		}
	}
}

// witnessAccount sets one vendor key's ledger of today beside its balance
// readings.
func (p *Processor) witnessAccount(ctx context.Context, l *lane, now time.Time) {
	days, err := p.store.AccountDrift(ctx, l.Account, now, now)
	if err != nil {
		p.log.Warn("the vendor key's ledger was not compared with the vendor's balance", "vendor", l.name, "err", err)
		return
	}
	for _, day := range days {
		if day.Readings == 0 {
			continue
		}
		p.cfg.Metrics.CreditDrift("account_day", day.Drift.Drift)
		if day.Drift.Drift != 0 {
			p.log.Warn("credit drift: the vendor key's ledger today and the vendor's balance readings disagree", "vendor", l.name, "day", day.Day.Format(time.DateOnly),
				"ledger_spent", day.LedgerSpent, "vendor_billed", day.VendorBilled, "drift", day.Drift.Drift, "readings", day.Readings)
		}
	}
}
