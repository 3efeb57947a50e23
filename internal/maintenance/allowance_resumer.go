package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// AllowanceResumerConfig tunes an AllowanceResumer. Zero values take the defaults.
type AllowanceResumerConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
	// Batch caps the jobs one step resumes. Default DefaultBatch.
	Batch int
	// Now is the clock that says which month it is (UTC). Default time.Now.
	Now func() time.Time
}

// AllowanceResumer resumes the jobs a monthly allowance paused (the
// tenant's or the vendor key's) once the month they paused in is over: the
// allowance has renewed. A job whose allowance is still spent pauses again
// at its next reservation, before any call, and waits for the month after.
type AllowanceResumer struct {
	store *store.Store
	cfg   AllowanceResumerConfig
	log   *slog.Logger
}

// NewAllowanceResumer builds an AllowanceResumer.
func NewAllowanceResumer(st *store.Store, cfg AllowanceResumerConfig, log *slog.Logger) *AllowanceResumer {
	cfg.Interval, cfg.Batch = intervalOr(cfg.Interval), batchOr(cfg.Batch)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &AllowanceResumer{store: st, cfg: cfg, log: loggerOr(log)}
}

// Name implements Service.
func (r *AllowanceResumer) Name() string { return "allowance_resumer" }

// Interval implements Service.
func (r *AllowanceResumer) Interval() time.Duration { return r.cfg.Interval }

// Step returns how many jobs it resumed.
func (r *AllowanceResumer) Step(ctx context.Context) (int, error) {
	ids, err := r.store.ResumeAllowancePaused(ctx, r.cfg.Now(), r.cfg.Batch)
	for _, id := range ids {
		r.log.Info("job resumed: its monthly allowance renewed", "job_id", id)
	}
	return len(ids), err
}
