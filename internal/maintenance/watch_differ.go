package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// WatchDifferConfig tunes a WatchDiffer. Zero values take the defaults.
type WatchDifferConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
	// Batch caps the runs one step compares. Default DefaultWatchBatch.
	Batch int
	// Now is the clock change lines are dated by; default time.Now.
	Now func() time.Time
}

// WatchDiffer compares the answers of the watch runs whose job ended (or
// stopped at the month's cap) with their watch's snapshots: change lines,
// the feed's changed lines and person.changed webhooks, once per run
// (store.DiffWatchRuns).
type WatchDiffer struct {
	store *store.Store
	cfg   WatchDifferConfig
	log   *slog.Logger
}

// NewWatchDiffer builds a WatchDiffer; log nil is slog.Default().
func NewWatchDiffer(st *store.Store, cfg WatchDifferConfig, log *slog.Logger) *WatchDiffer {
	cfg.Interval = intervalOr(cfg.Interval)
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultWatchBatch
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &WatchDiffer{store: st, cfg: cfg, log: loggerOr(log)}
}

// Name implements Service.
func (d *WatchDiffer) Name() string { return "watch_differ" }

// Interval implements Service.
func (d *WatchDiffer) Interval() time.Duration { return d.cfg.Interval }

// Step returns how many runs it compared.
func (d *WatchDiffer) Step(ctx context.Context) (int, error) {
	diffs, err := d.store.DiffWatchRuns(ctx, d.cfg.Now(), d.cfg.Batch)
	for _, x := range diffs {
		d.log.Info("watch run compared", "watch_id", x.WatchID, "job_id", x.JobID, "changes", x.Changes,
			"company_changes", x.CompanyChanges, "cap_reached", x.CapReached)
	}
	return len(diffs), err
}
