package jobs

import (
	"context"
	"time"

	"github.com/enrichq/enrichq/internal/enrich"
)

// explain closes the job's open calls that later answers to their
// Idempotency-Key have explained (store.ExplainJob): a lost worker's
// reservations, and calls of unknown outcome, whose rows another worker has
// since retried. It runs before the job may finish, so that a finished job's
// credits (and its callback's) are final. A failure leaves them open: the job
// then waits for the next chunk's explain step, or for their expiry.
func (p *Processor) explain(ctx context.Context, jobID string) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	ex, err := p.store.ExplainJob(sctx, jobID, func() bool { return p.honoursKeysAll(sctx) }, p.learnedPrice)
	if err != nil {
		p.log.Warn("open calls not explained; they stay counted at their reservation", "job_id", jobID, "err", err)
		return
	}
	if ex.ByReplay+ex.ByFresh+ex.Unknown > 0 {
		p.log.Info("open calls explained by later sends of their Idempotency-Key", "job_id", jobID,
			"by_replay", ex.ByReplay, "by_fresh_answer", ex.ByFresh, "counted_at_worst_case", ex.Unknown)
	}
	if ex.Unpriced > 0 {
		p.log.Info("open calls wait for the vendor to show their answer's price; counted at their worst case meanwhile", "job_id", jobID, "calls", ex.Unpriced)
	}
	p.witnessSettle(sctx, jobID)
}

// witnessSettle sets the vendor's balance readings beside the job's calls
// settled by inference, once its rows have all ended, and settles those the
// readings pin exactly (store.WitnessJob). A failure leaves them as
// inferred.
func (p *Processor) witnessSettle(ctx context.Context, jobID string) {
	for _, l := range p.lanes {
		if l.Account != "" {
			p.witnessSettleAccount(ctx, jobID, l)
		}
	}
}

// witnessSettleAccount is witnessSettle for the calls of one vendor key:
// the balance readings of a vendor witness its own calls only.
func (p *Processor) witnessSettleAccount(ctx context.Context, jobID string, l *lane) {
	w, err := p.store.WitnessJob(ctx, jobID, l.Account, l.honoursKeys(ctx))
	switch {
	case err != nil:
		p.log.Warn("the balance witness was not read; inferred charges stand", "job_id", jobID, "vendor", l.name, "err", err)
	case w.Settled > 0:
		p.log.Info("calls settled by the balance witness: the vendor's readings pinned their charge", "job_id", jobID,
			"calls", w.Settled, "credits", w.Credits, "confirmed", w.Confirmed)
		p.cfg.Metrics.WitnessSettled(w.Settled)
	case w.Confirmed > 0:
		p.log.Info("inferred charges confirmed by the balance witness", "job_id", jobID, "calls", w.Confirmed)
	case w.Skipped != "":
		p.log.Debug("the balance witness could not be used", "job_id", jobID, "why", w.Skipped)
	}
}

// learnedPrice is the price a vendor whose answers teach prices by class
// has shown for a class (by its name), in budget units: known is false when
// it has not (or the name is not a class). With two such vendors, the
// first's.
func (p *Processor) learnedPrice(class string) (int64, bool) {
	c, err := enrich.ParsePriceClass(class)
	if err != nil {
		return 0, false
	}
	for _, l := range p.lanes {
		if l.Prices != nil {
			n, ok := l.Prices.Price(c)
			return l.units(n), ok
		}
	}
	return 0, false
}
