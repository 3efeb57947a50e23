// Package vendororder chooses the order a row asks the vendors in: the
// order with the least expected charge per row, learned per segment of
// rows from what the vendors answered (docs/vendors.md, "The order").
//
// A Model holds the vendors' observed rates at one time and prices
// waterfall orders (cost.go); Auto is the worker's jobs.Orderer: it keeps
// a Model per tenant in memory (the tenant's own rates, the priors and a
// bounded pull of the pool), counts what it observes at once, writes it to
// Postgres, reads it back before each chunk, and lets a bounded number of
// rows explore another order.
package vendororder

import (
	"context"
	"errors"
	"log/slog"
	"slices"
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
	// DefaultFlushAt writes each Observe's batch (a chunk's answers) at
	// once: the next chunk of any worker reads them.
	DefaultFlushAt = 1
	// DefaultResync is the least time between two reads of one tenant's
	// rates by Sync.
	DefaultResync = 200 * time.Millisecond
	// maxPending bounds the increments kept while Postgres cannot take
	// them: past it, new ones are dropped (they are estimates).
	maxPending = 100_000
	// maxTenants bounds the tenants whose rates a worker keeps in memory;
	// past it, those with nothing unwritten are forgotten (read again by
	// their next Sync).
	maxTenants = 10_000
)

// Rates is where the observed rates live: internal/store's Store.
type Rates interface {
	AddVendorRates(ctx context.Context, incs []store.VendorRate) error
	VendorRates(ctx context.Context) ([]store.VendorRate, error)
	TenantVendorRates(ctx context.Context, tenant string) ([]store.VendorRate, error)
}

// Options tune Auto.
type Options struct {
	// Explore is the share of rows that ask another order (config explore,
	// 0 to config.MaxExplore; 0: none).
	Explore float64
	// ExploreAsks is how many asks of a vendor for a segment and stage
	// (the tenant's own) end its exploration there (0: DefaultExploreAsks):
	// exploration costs a bounded number of rows per segment.
	ExploreAsks int64
	// ExploreMargin is how much dearer than the cheapest, by the model, an
	// order may be and still be explored (0: DefaultExploreMargin; below
	// 0: no margin, only ties): what exploring costs is at most Explore ×
	// ExploreMargin of the rows' expected charge.
	ExploreMargin float64
	// PriorWeight is how many asks a prior counts for (0: DefaultPriorWeight).
	PriorWeight float64
	// PoolWeight is the most asks the pool (the other tenants' answers)
	// counts for in a tenant's rates (0: DefaultPoolWeight; below 0: none).
	PoolWeight float64
	// Refresh is how often Run writes what was observed and reads the
	// pool again (0: DefaultRefresh).
	Refresh time.Duration
	// Resync is the least time between two reads of a tenant's own rates
	// (Sync, before each chunk; 0: DefaultResync).
	Resync time.Duration
	// FlushAt is how many pending increments make Observe write them at
	// once (0: DefaultFlushAt).
	FlushAt int
	// Gauges, when set, show each refreshed pool's rates (its
	// metrics.MaxVendorRateSegments most asked segments), and count the
	// rows that explored.
	Gauges *metrics.VendorRates
	// Log receives Run's failures; default slog.Default().
	Log *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Auto is the automatic order (jobs.Orderer): per row, the order of the
// candidates with the least expected charge for the stages it needs, by
// the rates of its tenant and segment. Order reads memory only; Sync (at
// a chunk's start) and Run refresh it. Safe for concurrent use.
type Auto struct {
	vendors []Vendor
	rates   Rates
	opt     Options
	pooled  atomic.Pointer[Model] // every tenant's rates, for the gauges

	mu      sync.Mutex
	pool    []store.VendorRate // as last read
	tenants map[string]*tenantRates
	pending map[rateKey]*store.VendorRate
	flushMu sync.Mutex // one write or tenant read at a time, in observed order
}

// rateKey is a tenant's vendor, segment and stage.
type rateKey struct {
	tenant string
	segKey
}

// tenantRates is what a worker holds of one tenant's rates.
type tenantRates struct {
	read   []store.VendorRate // its rows as last read from Postgres
	readAt time.Time
	// local is what this worker observed of it since that read: counted at
	// once in its order, written or not.
	local map[segKey]counts
	model *Model // nil: to be made again
}

var _ jobs.Orderer = (*Auto)(nil)

// New is the automatic order of vendors, learning into rates. It starts
// from the priors alone: call Refresh (or Run) to read the pool, Sync a
// tenant's own rates.
func New(vendors []Vendor, rates Rates, opt Options) *Auto {
	if opt.Refresh <= 0 {
		opt.Refresh = DefaultRefresh
	}
	if opt.Resync <= 0 {
		opt.Resync = DefaultResync
	}
	if opt.FlushAt <= 0 {
		opt.FlushAt = DefaultFlushAt
	}
	if opt.ExploreAsks <= 0 {
		opt.ExploreAsks = DefaultExploreAsks
	}
	if opt.ExploreMargin == 0 {
		opt.ExploreMargin = DefaultExploreMargin
	}
	opt.ExploreMargin = max(opt.ExploreMargin, 0)
	if opt.PoolWeight == 0 {
		opt.PoolWeight = DefaultPoolWeight
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	opt.Explore = min(max(opt.Explore, 0), 0.5)
	a := &Auto{vendors: vendors, rates: rates, opt: opt, tenants: map[string]*tenantRates{}, pending: map[rateKey]*store.VendorRate{}}
	a.pooled.Store(NewModel(vendors, nil, opt.PriorWeight))
	return a
}

// DefaultExploreMargin is Options.ExploreMargin's default: an order up to
// 10% dearer than the cheapest by the model may be explored.
const DefaultExploreMargin = 0.1

// DefaultExploreAsks is Options.ExploreAsks's default: past 200 asks of a
// vendor in a segment (its rate known to a few points), its rows stop
// exploring there.
const DefaultExploreAsks = 200

// Model is the model of every tenant's rates (the pool), as last read.
func (a *Auto) Model() *Model { return a.pooled.Load() }

// TenantModel is the model tenant's rows are ordered by now: its own
// rates, this worker's observations of it not read back yet, the priors,
// and the pool's pull.
func (a *Auto) TenantModel(tenant string) *Model {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.tenant(tenant)
	if t.model == nil {
		own := slices.Clone(t.read)
		for k, c := range t.local {
			own = append(own, store.VendorRate{Tenant: tenant, Vendor: k.vendor, Segment: k.seg, Stage: k.stage,
				Asked: c.asked, Found: c.found, Credits: c.credits})
		}
		t.model = NewTenantModel(a.vendors, own, a.pool, a.opt.PriorWeight, a.opt.PoolWeight)
	}
	return t.model
}

// tenant is tenant's entry, made when missing (a.mu held).
func (a *Auto) tenant(tenant string) *tenantRates {
	t := a.tenants[tenant]
	if t == nil {
		if len(a.tenants) >= maxTenants {
			for name, o := range a.tenants {
				if len(o.local) == 0 {
					delete(a.tenants, name)
				}
			}
		}
		t = &tenantRates{local: map[segKey]counts{}}
		a.tenants[tenant] = t
	}
	return t
}

// Order is the cheapest order of q.Vendors for q's tenant, segment and
// stages, or, for the rows exploration picks (Explores), that order with
// another of its useful vendors first.
func (a *Auto) Order(_ context.Context, q jobs.OrderQuery) []string {
	m := a.TenantModel(q.Tenant)
	c := m.best(q.Segment, q.Stages, q.Vendors)
	order := c.order
	if j, ok := explores(q.RowID, a.opt.Explore, c.useful); ok && m.explorable(c.order[j], q.Segment, q.Stages, a.opt.ExploreAsks) {
		other := make([]string, 0, len(c.order))
		other = append(other, c.order[j])
		other = append(other, c.order[:j]...)
		other = append(other, c.order[j+1:]...)
		// Only an order the model holds nearly as cheap is worth a row: one
		// known to cost much more teaches little and would be paid for.
		if m.Cost(q.Segment, q.Stages, other) <= c.cost*(1+a.opt.ExploreMargin)+1e-9 {
			a.opt.Gauges.Explored()
			return other
		}
	}
	return append([]string(nil), order...)
}

// Observe counts obs at once in their tenants' orders on this worker, and
// adds them to the pending increments; once FlushAt of them are pending
// it writes them (Flush) for every worker.
func (a *Auto) Observe(ctx context.Context, obs []jobs.Observation) error {
	a.mu.Lock()
	for _, o := range obs {
		if o.Vendor == "" || !o.Stage.Valid() {
			continue
		}
		k := rateKey{o.Tenant, segKey{o.Vendor, o.Segment, o.Stage}}
		r := a.pending[k]
		if r == nil {
			if len(a.pending) >= maxPending {
				continue
			}
			r = &store.VendorRate{Tenant: o.Tenant, Vendor: o.Vendor, Segment: o.Segment, Stage: o.Stage}
			a.pending[k] = r
		}
		inc := store.VendorRate{Asked: 1, Credits: max(o.Credits, 0)}
		if o.Found {
			inc.Found = 1
		}
		r.Asked, r.Found, r.Credits = r.Asked+inc.Asked, r.Found+inc.Found, r.Credits+inc.Credits
		t := a.tenant(o.Tenant)
		c := t.local[k.segKey]
		c.add(inc)
		t.local[k.segKey] = c
		t.model = nil
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
			k := rateKey{r.Tenant, segKey{r.Vendor, r.Segment, r.Stage}}
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

// Sync reads tenant's own rates from Postgres (what every worker wrote of
// it), unless read less than Options.Resync ago: the worker calls it
// before a chunk, so that a job that follows another orders by what the
// first taught, whichever worker ran it. What this worker observed and
// could not write yet still counts.
func (a *Auto) Sync(ctx context.Context, tenant string) error {
	now := a.opt.Now()
	fresh := func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		t := a.tenants[tenant]
		return t != nil && !t.readAt.IsZero() && now.Sub(t.readAt) < a.opt.Resync
	}
	if fresh() {
		return nil
	}
	a.flushMu.Lock() // no write in flight: what was written is in the read
	defer a.flushMu.Unlock()
	if fresh() { // another chunk read it meanwhile
		return nil
	}
	rows, err := a.rates.TenantVendorRates(ctx, tenant)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.tenant(tenant)
	t.read, t.readAt, t.model = rows, now, nil
	clear(t.local)
	for k, r := range a.pending { // not written: not in the read
		if k.tenant == tenant {
			c := t.local[k.segKey]
			c.add(*r)
			t.local[k.segKey] = c
		}
	}
	return nil
}

// Refresh reads every tenant's rates (the pool) from Postgres: the pull of
// the pool on each tenant's order, and the gauges.
func (a *Auto) Refresh(ctx context.Context) error {
	rows, err := a.rates.VendorRates(ctx)
	if err != nil {
		return err
	}
	m := NewModel(a.vendors, rows, a.opt.PriorWeight)
	a.pooled.Store(m)
	a.mu.Lock()
	a.pool = rows
	for _, t := range a.tenants {
		t.model = nil
	}
	a.mu.Unlock()
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
