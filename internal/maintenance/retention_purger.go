package maintenance

import (
	"context"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// DefaultRetentionBatch caps the rows (and, apart, cache entries and
// feed lines) one transaction removes: each holds its locks briefly
// (about 0.2 s for 5,000 rows with their results, docs/operations.md).
const DefaultRetentionBatch = 5000

// RetentionPurgerConfig tunes a RetentionPurger. Zero values take the defaults.
type RetentionPurgerConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
	// Batch caps what one transaction removes. Default DefaultRetentionBatch.
	Batch int
	// Budget is how long a step goes on while batches come back full.
	// Default nine tenths of the interval: the purger has a loop of its own,
	// so no other service waits behind it, and a step ends a batch after its
	// budget, well before the step timeout (the lease's 15 s); at half the
	// interval a purge ran at half the rate of its batches. Negative: one
	// batch a step.
	Budget time.Duration
	// Now is the clock windows are counted by; default time.Now.
	Now func() time.Time
}

// RetentionPurger removes what is older than its tenant's retention window
// (PATCH /v1/account {"retention": "30d"}): the rows of finished jobs with
// their results and no-match markers, cache entries and feed lines. A job
// that has not changed for longer than the window without finishing (paused
// and never resumed, or stuck) is canceled first, then purged. The job
// stays, with its counts and credits, and shows purged_at
// (store.PurgeExpired; docs/personal-data.md).
type RetentionPurger struct {
	store *store.Store
	cfg   RetentionPurgerConfig
}

// NewRetentionPurger builds a RetentionPurger.
func NewRetentionPurger(st *store.Store, cfg RetentionPurgerConfig) *RetentionPurger {
	cfg.Interval = intervalOr(cfg.Interval)
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultRetentionBatch
	}
	if cfg.Budget == 0 {
		cfg.Budget = cfg.Interval * 9 / 10
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &RetentionPurger{store: st, cfg: cfg}
}

// Name implements Service.
func (p *RetentionPurger) Name() string { return "retention_purger" }

// Interval implements Service.
func (p *RetentionPurger) Interval() time.Duration { return p.cfg.Interval }

// Step returns how many rows, results, markers, cache entries and feed
// lines it removed, and abandoned jobs it canceled.
// Batches follow one another while they come back full and the budget
// lasts.
func (p *RetentionPurger) Step(ctx context.Context) (int, error) {
	start := time.Now()
	did := 0
	for {
		n, err := p.store.PurgeExpired(ctx, p.cfg.Now(), p.cfg.Batch)
		did += int(n.Total() + n.Abandoned)
		if err != nil || !n.More(p.cfg.Batch) || time.Since(start) >= p.cfg.Budget || ctx.Err() != nil {
			return did, err
		}
	}
}
