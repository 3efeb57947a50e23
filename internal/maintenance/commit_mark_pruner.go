package maintenance

import (
	"context"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// DefaultCommitMarkAge is how long the mark of a committed statement is
// kept: a lost answer is looked into within seconds, a day is ample.
const DefaultCommitMarkAge = 24 * time.Hour

// CommitMarkPrunerConfig tunes a CommitMarkPruner. Zero values take the defaults.
type CommitMarkPrunerConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
	// Age past which marks are deleted. Default DefaultCommitMarkAge.
	Age time.Duration
	// Batch caps the marks one step deletes. Default 10 × DefaultBatch.
	Batch int
}

// CommitMarkPruner deletes old commit marks: what a reservation, a chunk's
// save or a submit writes so that its outcome can be found if its answer is
// lost (store.ErrOutcomeUnknown).
type CommitMarkPruner struct {
	store *store.Store
	cfg   CommitMarkPrunerConfig
}

// NewCommitMarkPruner builds a CommitMarkPruner.
func NewCommitMarkPruner(st *store.Store, cfg CommitMarkPrunerConfig) *CommitMarkPruner {
	cfg.Interval = intervalOr(cfg.Interval)
	if cfg.Age <= 0 {
		cfg.Age = DefaultCommitMarkAge
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 10 * DefaultBatch
	}
	return &CommitMarkPruner{store: st, cfg: cfg}
}

// Name implements Service.
func (p *CommitMarkPruner) Name() string { return "commit_mark_pruner" }

// Interval implements Service.
func (p *CommitMarkPruner) Interval() time.Duration { return p.cfg.Interval }

// Step returns how many marks it deleted.
func (p *CommitMarkPruner) Step(ctx context.Context) (int, error) {
	n, err := p.store.PruneCommitMarks(ctx, p.cfg.Age, p.cfg.Batch)
	return int(n), err
}
