package vendororder_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
	"github.com/enrichq/enrichq/internal/vendororder"
)

var (
	segUS        = domain.Segment{Kind: domain.InputNameDomain, Country: "us"}
	segDE        = domain.Segment{Kind: domain.InputNameDomain, Country: "de"}
	profileEmail = []domain.Stage{domain.StageProfile, domain.StageEmail}
)

// seedAndPDL are a seed-shaped vendor (a profile search 2 credits, hit or
// miss; an email 5 when found, by the profile's URL) and a PDL-shaped one
// (1 credit a match, worth 10 units, its record filling profile and email).
func seedAndPDL(t *testing.T) []vendororder.Vendor {
	t.Helper()
	vs, err := vendororder.FromSpecs([]config.VendorSpec{
		{Name: "seed", Kind: config.VendorSeed, URL: "https://seed.example", CreditValue: 1, PriorHitRate: 0.5,
			Prices: map[string]int64{"profile_by_search": 2, "email_hit": 5, "email_verified": 5}},
		{Name: "pdl", Kind: config.VendorPDL, URL: "https://pdl.example", CreditValue: 10, PriorHitRate: 0.5,
			Prices: map[string]int64{"match": 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// answers are n rows of tenant's segment asked of both vendors, observed
// stage by stage as the waterfall observes them: the seed finds a share
// seedP of the profiles (each search 2 credits) and, of those, 70% of the
// emails (5 credits each), looked up only for a profile found; pdl matches
// a share pdlP (1 credit a match, on its first stage), 90% of its matches
// with an email.
func answers(tenant string, seg domain.Segment, n int, seedP, pdlP float64) []jobs.Observation {
	var obs []jobs.Observation
	for i := range n {
		f := (float64(i) + 0.5) / float64(n)
		seedFound := f < seedP
		obs = append(obs, jobs.Observation{Tenant: tenant, Vendor: "seed", Segment: seg, Stage: domain.StageProfile, Found: seedFound, Credits: 2})
		if seedFound {
			email := f < 0.7*seedP
			obs = append(obs, jobs.Observation{Tenant: tenant, Vendor: "seed", Segment: seg, Stage: domain.StageEmail, Found: email,
				Credits: map[bool]int64{true: 5}[email]})
		}
		match := f < pdlP
		obs = append(obs, jobs.Observation{Tenant: tenant, Vendor: "pdl", Segment: seg, Stage: domain.StageProfile, Found: match,
			Credits: map[bool]int64{true: 1}[match]})
		obs = append(obs, jobs.Observation{Tenant: tenant, Vendor: "pdl", Segment: seg, Stage: domain.StageEmail, Found: f < 0.9*pdlP})
	}
	return obs
}

func orderOf(a *vendororder.Auto, tenant string, seg domain.Segment) []string {
	// Row 1 does not explore at the default share.
	return a.Order(context.Background(), jobs.OrderQuery{Tenant: tenant, Segment: seg, Stages: profileEmail, Vendors: []string{"seed", "pdl"}, RowID: 1})
}

// Two tenants whose rows teach opposite things (the seed strong at us and
// weak at de for one, the other way round for the other) learn opposite
// orders for profile and email, each flipping per segment: at once on the
// worker that observed them, and on another worker as soon as it reads
// the tenant's rates before a chunk (Sync), without waiting for a refresh.
// The pool (the other tenant's answers) pulls a tenant's rate by at most
// poolWeight ÷ (asked + poolWeight + w).
func TestTwoTenantsLearnOppositeOrders(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	vs := seedAndPDL(t)
	w1 := vendororder.New(vs, st, vendororder.Options{Refresh: time.Hour})
	if got := orderOf(w1, "t1", segUS); !slices.Equal(got, []string{"pdl", "seed"}) {
		t.Fatalf("before answers: %v; want pdl first (the priors: half the rows matched, both stages filled)", got)
	}
	obs := append(answers("t1", segUS, 200, 0.9, 0.1), answers("t1", segDE, 200, 0.2, 0.8)...)
	obs = append(obs, answers("t2", segUS, 200, 0.2, 0.8)...)
	obs = append(obs, answers("t2", segDE, 200, 0.9, 0.1)...)
	if err := w1.Observe(ctx, obs); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[domain.Segment][]string{
		"t1": {segUS: {"seed", "pdl"}, segDE: {"pdl", "seed"}},
		"t2": {segUS: {"pdl", "seed"}, segDE: {"seed", "pdl"}},
	}
	check := func(who string, a *vendororder.Auto) {
		t.Helper()
		for tenant, segs := range want {
			for seg, order := range segs {
				if got := orderOf(a, tenant, seg); !slices.Equal(got, order) {
					t.Errorf("%s: %s at %s: %v; want %v", who, tenant, seg, got, order)
				}
			}
		}
	}
	check("the worker that observed", w1)

	w2 := vendororder.New(vs, st, vendororder.Options{Refresh: time.Hour})
	for _, tenant := range []string{"t1", "t2"} {
		if err := w2.Sync(ctx, tenant); err != nil {
			t.Fatal(err)
		}
	}
	check("another worker after Sync", w2)
	if err := w2.Refresh(ctx); err != nil { // the pool too: t2's opposite answers pull t1's
		t.Fatal(err)
	}
	check("another worker with the pool", w2)

	own, err := st.TenantVendorRates(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	alone := vendororder.NewModel(vs, own, 0)
	pulled := w2.TenantModel("t1")
	e0, _ := alone.Estimate("seed", segUS, domain.StageProfile)
	e1, _ := pulled.Estimate("seed", segUS, domain.StageProfile)
	bound := vendororder.DefaultPoolWeight / (float64(e0.Asked) + vendororder.DefaultPoolWeight + vendororder.DefaultPriorWeight)
	if e1.Asked != 200 || e1.Found != 180 || e1.P >= e0.P || e0.P-e1.P > bound {
		t.Errorf("t1's seed at us: %+v with the pool, %+v alone; the pool may pull it by %.3f at most", e1, e0, bound)
	}
}

// unwritable is a store that takes no write: what a worker observed
// still counts in its own order, and still after it reads the tenant's
// rates again.
type unwritable struct{ *store.Store }

func (unwritable) AddVendorRates(context.Context, []store.VendorRate) error {
	return errors.New("postgres is away")
}

func TestObservedCountsAtOnceEvenUnwritten(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	a := vendororder.New(seedAndPDL(t), unwritable{st}, vendororder.Options{Refresh: time.Hour})
	if err := a.Observe(ctx, answers("t1", segUS, 200, 0.9, 0.1)); err == nil {
		t.Fatal("Observe = nil; want the write's error")
	}
	if got := orderOf(a, "t1", segUS); !slices.Equal(got, []string{"seed", "pdl"}) {
		t.Errorf("after the learning rows: %v; want [seed pdl]", got)
	}
	if err := a.Sync(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if got := orderOf(a, "t1", segUS); !slices.Equal(got, []string{"seed", "pdl"}) {
		t.Errorf("after reading the tenant's rates again: %v; want [seed pdl] (the unwritten answers still count)", got)
	}
	if got := orderOf(a, "t2", segUS); !slices.Equal(got, []string{"pdl", "seed"}) {
		t.Errorf("another tenant: %v; want the priors' [pdl seed]", got)
	}
}

// Exploration ends in a segment once the explored vendor has been asked
// ExploreAsks times there, and each exploring row is counted.
func TestExplorationEndsOnceLearned(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	a := vendororder.New(seedAndPDL(t), st, vendororder.Options{Refresh: time.Hour, Explore: 0.5, ExploreAsks: 100})
	explored := func() int {
		n := 0
		for id := int64(1); id <= 1000; id++ {
			got := a.Order(ctx, jobs.OrderQuery{Tenant: "t1", Segment: segUS, Stages: profileEmail, Vendors: []string{"seed", "pdl"}, RowID: id})
			if got[0] == "seed" {
				n++
			}
		}
		return n
	}
	if n := explored(); math.Abs(float64(n)-500) > 60 {
		t.Errorf("before answers, %d of 1000 rows explored; want about half", n)
	}
	if err := a.Observe(ctx, answers("t1", segUS, 100, 0.3, 0.6)); err != nil {
		t.Fatal(err)
	}
	if n := explored(); n != 0 {
		t.Errorf("after 100 asks of each vendor, %d rows explored; want none", n)
	}
}

// An order the model holds far dearer than the cheapest is not explored,
// however few asks it has: exploring costs at most Explore × ExploreMargin
// of the rows' expected charge.
func TestExplorationSparesOrdersKnownDear(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	a := vendororder.New(seedAndPDL(t), st, vendororder.Options{Refresh: time.Hour, Explore: 0.5, ExploreAsks: 1 << 40,
		ExploreMargin: 0.1})
	// The seed finds nobody at de: asking it first is a search billed for
	// nothing on every row, 15% dearer.
	if err := a.Observe(ctx, append(answers("t1", segUS, 400, 0.9, 0), answers("t1", segDE, 400, 0, 0.9)...)); err != nil {
		t.Fatal(err)
	}
	m := a.TenantModel("t1")
	_, best := m.Best(segDE, profileEmail, []string{"seed", "pdl"})
	if dear := m.Cost(segDE, profileEmail, []string{"seed", "pdl"}); dear <= best*1.1 {
		t.Fatalf("seed first at de costs %v, the best %v: not dear enough for the test", dear, best)
	}
	for id := int64(1); id <= 1000; id++ {
		got := a.Order(ctx, jobs.OrderQuery{Tenant: "t1", Segment: segDE, Stages: profileEmail, Vendors: []string{"seed", "pdl"}, RowID: id})
		if got[0] != "pdl" {
			t.Fatalf("row %d at de asked %v: the seed first is far dearer there", id, got)
		}
	}
}
