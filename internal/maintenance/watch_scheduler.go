package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
)

// DefaultWatchBatch caps the watches one step starts runs of.
const DefaultWatchBatch = 100

// WatchSchedulerConfig tunes a WatchScheduler. Zero values take the defaults.
type WatchSchedulerConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
	// Batch caps the watches one step starts. Default DefaultWatchBatch.
	Batch int
	// ChunkSize is the rows of a run's chunk task. Default jobs.DefaultChunkSize.
	ChunkSize int
	// Now is the clock slots are due by; default time.Now.
	Now func() time.Time
}

// WatchScheduler starts the runs of the watches whose slot is due: in one
// transaction per step it takes the due watches (SKIP LOCKED), inserts each
// run for its slot (never twice), makes its job (the chunk dispatcher hands
// it to the queue) and sets the next slot. What a step did not commit is
// due again at the next one, on this leader or the next (store.SweepDueWatches).
type WatchScheduler struct {
	store *store.Store
	cfg   WatchSchedulerConfig
	log   *slog.Logger
}

// NewWatchScheduler builds a WatchScheduler; log nil is slog.Default().
func NewWatchScheduler(st *store.Store, cfg WatchSchedulerConfig, log *slog.Logger) *WatchScheduler {
	cfg.Interval = intervalOr(cfg.Interval)
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultWatchBatch
	}
	if cfg.ChunkSize <= 0 {
		cfg.ChunkSize = jobs.DefaultChunkSize
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &WatchScheduler{store: st, cfg: cfg, log: loggerOr(log)}
}

// Name implements Service.
func (s *WatchScheduler) Name() string { return "watch_scheduler" }

// Interval implements Service.
func (s *WatchScheduler) Interval() time.Duration { return s.cfg.Interval }

// Step returns how many runs it started.
func (s *WatchScheduler) Step(ctx context.Context) (int, error) {
	outs, err := s.store.SweepDueWatches(ctx, s.cfg.Now(), s.cfg.Batch, s.cfg.ChunkSize)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range outs {
		switch {
		case o.Run != nil:
			n++
			s.log.Info("watch run started", "watch_id", o.Watch.ID, "job_id", o.Run.JobID, "rows", o.Run.Rows,
				"budget", o.Run.Budget, "next_run_at", o.Watch.NextRunAt)
		case o.CapReached:
			s.log.Info("watch cap reached", "watch_id", o.Watch.ID, "next_run_at", o.Watch.NextRunAt)
		}
	}
	return n, nil
}
