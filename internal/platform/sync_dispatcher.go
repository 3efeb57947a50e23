package platform

import (
	"context"
	"time"
)

// DefaultStepInterval is the period of the platform's periodic steps.
const DefaultStepInterval = 5 * time.Second

// SyncDispatcher is the periodic step that hands due member sync chunks to
// the queue: pending rows not handed out within the recheck, and rows
// parked (quota, backoff) that became due. Safe from several schedulers:
// they get disjoint chunks (SKIP LOCKED).
type SyncDispatcher struct {
	p        *Platform
	interval time.Duration
}

// NewSyncDispatcher builds the dispatch step of p, run every interval
// (default DefaultStepInterval). p needs a queue (its enq).
func NewSyncDispatcher(p *Platform, interval time.Duration) *SyncDispatcher {
	return &SyncDispatcher{p: p, interval: positive(interval, DefaultStepInterval)}
}

// Name names the step in logs.
func (d *SyncDispatcher) Name() string { return "platform_sync_dispatcher" }

// Interval is the period between steps.
func (d *SyncDispatcher) Interval() time.Duration { return d.interval }

// Step hands the due chunks to the queue and returns how many it handed.
func (d *SyncDispatcher) Step(ctx context.Context) (int, error) {
	p := d.p
	if p.enq == nil {
		return 0, nil
	}
	due, err := p.store.PlatformChunksToEnqueue(ctx, p.cfg.Now(), p.cfg.Recheck, p.cfg.Batch)
	if err != nil {
		return 0, err
	}
	for i, ref := range due {
		if err := p.enqueue(ctx, ref); err != nil {
			return i, err // the rest are handed again after the recheck
		}
	}
	return len(due), nil
}
