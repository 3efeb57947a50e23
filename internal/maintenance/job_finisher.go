package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/store"
)

// JobFinisherConfig tunes a JobFinisher. Zero values take the defaults.
type JobFinisherConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
	// Metrics records the finished jobs' durations; nil records nothing.
	Metrics *metrics.Pipeline
}

// JobFinisher marks finished the jobs with no open row: those whose last
// rows ended without a worker finishing the job (lease expiry at the
// attempt cap, a cancel), which the worker's own check after a chunk
// cannot see.
type JobFinisher struct {
	store *store.Store
	cfg   JobFinisherConfig
	log   *slog.Logger
}

// NewJobFinisher builds a JobFinisher; log nil is slog.Default().
func NewJobFinisher(st *store.Store, cfg JobFinisherConfig, log *slog.Logger) *JobFinisher {
	cfg.Interval = intervalOr(cfg.Interval)
	return &JobFinisher{store: st, cfg: cfg, log: loggerOr(log)}
}

// Name implements Service.
func (f *JobFinisher) Name() string { return "job_finisher" }

// Interval implements Service.
func (f *JobFinisher) Interval() time.Duration { return f.cfg.Interval }

// Step returns how many jobs it finished.
func (f *JobFinisher) Step(ctx context.Context) (int, error) {
	finished, err := f.store.FinishJobs(ctx, "")
	if err != nil {
		return 0, err
	}
	for _, j := range finished {
		f.log.Info("job finished", "job_id", j.ID, "state", j.State, "rows", j.TotalRows, "credits_spent", j.CreditsSpent)
		if j.FinishedAt != nil {
			f.cfg.Metrics.JobFinished(j.FinishedAt.Sub(j.CreatedAt))
		}
	}
	return len(finished), nil
}
