package maintenance

import (
	"context"
	"time"

	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
)

// LeaseRescuerConfig tunes a LeaseRescuer. Zero values take the defaults.
type LeaseRescuerConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
	// MaxAttempts: a row whose lease expires that many times ends failed.
	// Default jobs.DefaultMaxAttempts.
	MaxAttempts int
	// Batch caps the rows one step takes back. Default DefaultBatch.
	Batch int
}

func (c *LeaseRescuerConfig) fill() {
	c.Interval = intervalOr(c.Interval)
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = jobs.DefaultMaxAttempts
	}
	c.Batch = batchOr(c.Batch)
}

// LeaseRescuer takes back the rows whose lease expired (their worker was
// lost), counting a failed attempt, and hands their chunks to the queue at
// once rather than a recheck later: their worker is gone.
type LeaseRescuer struct {
	store *store.Store
	enq   *jobs.Enqueuer
	cfg   LeaseRescuerConfig
}

// NewLeaseRescuer builds a LeaseRescuer.
func NewLeaseRescuer(st *store.Store, enq *jobs.Enqueuer, cfg LeaseRescuerConfig) *LeaseRescuer {
	cfg.fill()
	return &LeaseRescuer{store: st, enq: enq, cfg: cfg}
}

// Name implements Service.
func (r *LeaseRescuer) Name() string { return "lease_rescuer" }

// Interval implements Service.
func (r *LeaseRescuer) Interval() time.Duration { return r.cfg.Interval }

// Step takes expired leases back and returns how many chunks got work back.
func (r *LeaseRescuer) Step(ctx context.Context) (int, error) {
	reclaimed, err := r.store.ReclaimExpiredLeases(ctx, r.cfg.MaxAttempts, r.cfg.Batch)
	if err != nil {
		return 0, err
	}
	for _, ref := range reclaimed {
		if err := r.enq.Requeue(ctx, ref); err != nil {
			return len(reclaimed), err // the dispatcher hands them after its recheck
		}
	}
	return len(reclaimed), nil
}
