package maintenance

import (
	"context"
	"time"

	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
)

// ChunkDispatcherConfig tunes a ChunkDispatcher. Zero values take the defaults.
type ChunkDispatcherConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
	// Recheck is how long a chunk handed to the queue is trusted to be there
	// before it is handed again (a no-op when it is: deterministic task
	// ids). Default jobs.DefaultRecheck.
	Recheck time.Duration
	// Window is how many chunks of one job are in the queue at once; zero
	// takes store.DefaultWindow.
	Window int
	// Batch caps the chunks one step hands. Default DefaultBatch.
	Batch int
}

// ChunkDispatcher hands the chunks that are due to the queue: new work,
// rows whose retry is due, and chunks whose task the queue lost. Postgres
// is the truth; the queue only carries which chunk to run.
type ChunkDispatcher struct {
	store *store.Store
	enq   *jobs.Enqueuer
	cfg   ChunkDispatcherConfig
}

// NewChunkDispatcher builds a ChunkDispatcher.
func NewChunkDispatcher(st *store.Store, enq *jobs.Enqueuer, cfg ChunkDispatcherConfig) *ChunkDispatcher {
	cfg.Interval, cfg.Batch = intervalOr(cfg.Interval), batchOr(cfg.Batch)
	if cfg.Recheck <= 0 {
		cfg.Recheck = jobs.DefaultRecheck
	}
	return &ChunkDispatcher{store: st, enq: enq, cfg: cfg}
}

// Name implements Service.
func (d *ChunkDispatcher) Name() string { return "chunk_dispatcher" }

// Interval implements Service.
func (d *ChunkDispatcher) Interval() time.Duration { return d.cfg.Interval }

// Step returns how many chunks it handed to the queue.
func (d *ChunkDispatcher) Step(ctx context.Context) (int, error) {
	return d.enq.Dispatch(ctx, d.store, "", d.cfg.Window, d.cfg.Recheck, d.cfg.Batch)
}
