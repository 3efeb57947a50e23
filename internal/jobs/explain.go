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
	ex, err := p.store.ExplainJob(sctx, jobID, func() bool { return p.honoursKeys(sctx) }, p.learnedPrice)
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
}

// learnedPrice is the price the vendor has shown for a class (by its name):
// known is false when it has not (or the name is not a class).
func (p *Processor) learnedPrice(class string) (int64, bool) {
	c, err := enrich.ParsePriceClass(class)
	if err != nil {
		return 0, false
	}
	return p.cfg.Prices.Price(c)
}
