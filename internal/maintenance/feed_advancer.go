package maintenance

import (
	"context"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// FeedAdvancerConfig tunes a FeedAdvancer. Zero values take the defaults.
type FeedAdvancerConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
}

// FeedAdvancer gives new results their feed positions, so ETL readers see
// them even when nobody calls the API's feed.
type FeedAdvancer struct {
	store *store.Store
	cfg   FeedAdvancerConfig
}

// NewFeedAdvancer builds a FeedAdvancer.
func NewFeedAdvancer(st *store.Store, cfg FeedAdvancerConfig) *FeedAdvancer {
	cfg.Interval = intervalOr(cfg.Interval)
	return &FeedAdvancer{store: st, cfg: cfg}
}

// Name implements Service.
func (a *FeedAdvancer) Name() string { return "feed_advancer" }

// Interval implements Service.
func (a *FeedAdvancer) Interval() time.Duration { return a.cfg.Interval }

// Step returns how many results it put in the feed.
func (a *FeedAdvancer) Step(ctx context.Context) (int, error) {
	n, err := a.store.AdvanceResultsFeed(ctx)
	return int(n), err
}
