// Package vendororder chooses the order a row asks the vendors in: the
// order with the least expected charge per row, learned per segment of
// rows from what the vendors answered (docs/vendors.md, "The order").
//
// A Model holds the vendors' observed rates at one time and prices
// waterfall orders (cost.go); Auto is the worker's jobs.Orderer: it keeps
// a Model in memory, refreshed from Postgres, batches what it observes
// into Postgres, and lets a small share of rows explore another order.
package vendororder

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/store"
)

// Defaults of Options.
const (
	DefaultRefresh = 30 * time.Second
	DefaultFlushAt = 500
	// maxPending bounds the increments kept while Postgres cannot take
	// them: past it, new ones are dropped (they are estimates).
	maxPending = 100_000
)

// Rates is where the observed rates live: internal/store's Store.
type Rates interface {
	AddVendorRates(ctx context.Context, incs []store.VendorRate) error
	VendorRates(ctx context.Context) ([]store.VendorRate, error)
}

// Options tune Auto.
type Options struct {
	// Explore is the share of rows that ask another order (config explore,
	// 0 to config.MaxExplore; 0: none).
	Explore float64
	// PriorWeight is how many asks a prior counts for (0: DefaultPriorWeight).
	PriorWeight float64
	// Refresh is how often Run writes what was observed and reads the
	// rates again (0: DefaultRefresh).
	Refresh time.Duration
	// FlushAt is how many pending increments make Observe write them at
	// once (0: DefaultFlushAt).
	FlushAt int
	// Gauges, when set, show each refreshed model's rates (its
	// metrics.MaxVendorRateSegments most asked segments).
	Gauges *metrics.VendorRates
	// Log receives Run's failures; default slog.Default().
	Log *slog.Logger
}

// Auto is the automatic order (jobs.Orderer): per row, the order of the
// candidates with the least expected charge for the stages it needs, by
// the rates of its segment. Order reads memory only; Run refreshes it.
// Safe for concurrent use.
type Auto struct {
	vendors []Vendor
	rates   Rates
	opt     Options
	model   atomic.Pointer[Model]

	mu      sync.Mutex
	pending map[segKey]*store.VendorRate
	flushMu sync.Mutex // one write at a time, in observed order
}

var _ jobs.Orderer = (*Auto)(nil)

// New is the automatic order of vendors, learning into rates. It starts
// from the priors alone: call Refresh (or Run) to read what was learned.
func New(vendors []Vendor, rates Rates, opt Options) *Auto {
	if opt.Refresh <= 0 {
		opt.Refresh = DefaultRefresh
	}
	if opt.FlushAt <= 0 {
		opt.FlushAt = DefaultFlushAt
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	opt.Explore = min(max(opt.Explore, 0), 0.5)
	a := &Auto{vendors: vendors, rates: rates, opt: opt, pending: map[segKey]*store.VendorRate{}}
	a.model.Store(NewModel(vendors, nil, opt.PriorWeight))
	return a
}

// Model is the model Order uses now.
func (a *Auto) Model() *Model { return a.model.Load() }

// Order is the cheapest order of q.Vendors for q's segment and stages, or,
// for the rows exploration picks (Explores), that order with another of
// its useful vendors first.
func (a *Auto) Order(_ context.Context, q jobs.OrderQuery) []string {
	c := a.model.Load().best(q.Segment, q.Stages, q.Vendors)
	order := c.order
	if j, ok := explores(q.RowID, a.opt.Explore, c.useful); ok {
		order = make([]string, 0, len(c.order))
		order = append(order, c.order[j])
		order = append(order, c.order[:j]...)
		order = append(order, c.order[j+1:]...)
		return order
	}
	return append([]string(nil), order...)
}

// Observe adds obs to the pending increments; once FlushAt of them are
// pending it writes them (Flush).
func (a *Auto) Observe(ctx context.Context, obs []jobs.Observation) error {
	a.mu.Lock()
	for _, o := range obs {
		if o.Vendor == "" || !o.Stage.Valid() {
			continue
		}
		k := segKey{o.Vendor, o.Segment, o.Stage}
		r := a.pending[k]
		if r == nil {
			if len(a.pending) >= maxPending {
				continue
			}
			r = &store.VendorRate{Vendor: o.Vendor, Segment: o.Segment, Stage: o.Stage}
			a.pending[k] = r
		}
		r.Asked++
		if o.Found {
			r.Found++
		}
		r.Credits += max(o.Credits, 0)
	}
	n := len(a.pending)
	a.mu.Unlock()
	if n >= a.opt.FlushAt {
		return a.Flush(ctx)
	}
	return nil
}

// Flush writes the pending increments to Postgres. On failure they stay
// pending, for the next flush.
func (a *Auto) Flush(ctx context.Context) error {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	a.mu.Lock()
	batch := make([]store.VendorRate, 0, len(a.pending))
	for _, r := range a.pending {
		batch = append(batch, *r)
	}
	clear(a.pending)
	a.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := a.rates.AddVendorRates(ctx, batch)
	if err != nil {
		a.mu.Lock()
		for _, r := range batch { // back in, with what came meanwhile
			k := segKey{r.Vendor, r.Segment, r.Stage}
			if p := a.pending[k]; p != nil {
				p.Asked, p.Found, p.Credits = p.Asked+r.Asked, p.Found+r.Found, p.Credits+r.Credits
			} else if len(a.pending) < maxPending {
				a.pending[k] = &r
			}
		}
		a.mu.Unlock()
	}
	return err
}

// Refresh reads every worker's rates from Postgres into a new model (its
// orders computed afresh as rows ask for them).
func (a *Auto) Refresh(ctx context.Context) error {
	rows, err := a.rates.VendorRates(ctx)
	if err != nil {
		return err
	}
	m := NewModel(a.vendors, rows, a.opt.PriorWeight)
	a.model.Store(m)
	a.opt.Gauges.Set(m.gaugeRates(metrics.MaxVendorRateSegments))
	return nil
}

// Run flushes and refreshes every Options.Refresh until ctx is done, then
// flushes what is left (within a few seconds).
func (a *Auto) Run(ctx context.Context) {
	t := time.NewTicker(a.opt.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := a.Flush(fctx); err != nil {
				a.opt.Log.Warn("vendor order: writing the last observed rates", "err", err)
			}
			cancel()
			return
		case <-t.C:
		}
		err := errors.Join(a.Flush(ctx), a.Refresh(ctx))
		if err != nil && ctx.Err() == nil {
			a.opt.Log.Warn("vendor order: flushing or refreshing the observed rates", "err", err)
		}
	}
}

// explores says whether row rowID explores at share, and if so the
// position (1 to useful-1) of the vendor it asks first instead. Chosen by
// a hash of the row id: a row retried asks in the same order, and about
// share of rows explore (none when fewer than two vendors are useful).
func explores(rowID int64, share float64, useful int) (int, bool) {
	if share <= 0 || useful < 2 {
		return 0, false
	}
	h := splitmix64(uint64(rowID))
	if float64(h>>11)/(1<<53) >= share {
		return 0, false
	}
	return 1 + int(splitmix64(h)%uint64(useful-1)), true
}

// splitmix64 mixes x (Steele, Lea and Flood's SplitMix64 finaliser).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// UsualStages are the stage sets /v1/vendors shows an order for.
var UsualStages = [][]domain.Stage{
	{domain.StageProfile},
	{domain.StageProfile, domain.StageEmail},
	{domain.StageProfile, domain.StagePhone},
	{domain.StageProfile, domain.StageEmail, domain.StagePhone},
}
