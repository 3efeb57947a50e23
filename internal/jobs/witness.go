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
	d, err := p.store.JobDrift(sctx, jobID)
	if err != nil {
		p.log.Warn("the job's ledger was not compared with the vendor's balance", "job_id", jobID, "err", err)
		return
	}
	if d.Readings > 0 {
		p.cfg.Metrics.CreditDrift("job", d.Drift)
		if d.Drift != 0 {
			p.log.Warn("credit drift: the job's ledger and the vendor's balance readings disagree", "job_id", jobID,
				"ledger_spent", d.LedgerSpent, "vendor_billed", d.VendorBilled, "drift", d.Drift, "readings", d.Readings)
		}
	}
	if p.cfg.Account == "" {
		return
	}
	now := p.cfg.Now().UTC()
	days, err := p.store.AccountDrift(sctx, p.cfg.Account, now, now)
	if err != nil {
		p.log.Warn("the vendor key's ledger was not compared with the vendor's balance", "err", err)
		return
	}
	for _, day := range days {
		if day.Readings == 0 {
			continue
		}
		p.cfg.Metrics.CreditDrift("account_day", day.Drift.Drift)
		if day.Drift.Drift != 0 {
			p.log.Warn("credit drift: the vendor key's ledger today and the vendor's balance readings disagree", "day", day.Day.Format(time.DateOnly),
				"ledger_spent", day.LedgerSpent, "vendor_billed", day.VendorBilled, "drift", day.Drift.Drift, "readings", day.Readings)
		}
	}
}
