package vendororder

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
)

// noRates is a Rates that holds nothing.
type noRates struct{}

func (noRates) AddVendorRates(context.Context, []store.VendorRate) error { return nil }
func (noRates) VendorRates(context.Context) ([]store.VendorRate, error)  { return nil, nil }
func (noRates) TenantVendorRates(context.Context, string) ([]store.VendorRate, error) {
	return nil, nil
}

// About the configured share of rows, never more than it and a little,
// ask another order: the same rows every time, each order a permutation
// of the candidates (exploring adds no vendor). With explore 0, or one
// vendor able to answer, no row explores.
func TestExplorationBoundedAndDeterministic(t *testing.T) {
	vs := specs(t,
		seedSpec("a", 0.9, nil),
		seedSpec("b", 0.5, nil),
		seedSpec("c", 0.2, nil),
	)
	ctx := context.Background()
	candidates := []string{"c", "b", "a"}
	const rows = 20_000
	explored := func(share float64, cands []string) (n int, firsts map[string]int) {
		a := New(vs, noRates{}, Options{Explore: share, ExploreMargin: 100}) // every order near enough to explore
		best, _ := a.Model().Best(nameDomainFR, profileOnly, cands)
		firsts = map[string]int{}
		for id := int64(1); id <= rows; id++ {
			q := jobs.OrderQuery{Tenant: "t", Segment: nameDomainFR, Stages: profileOnly, Vendors: cands, RowID: id}
			got := a.Order(ctx, q)
			if again := a.Order(ctx, q); !slices.Equal(got, again) {
				t.Fatalf("row %d: %v then %v", id, got, again)
			}
			if s1, s2 := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(cands)); !slices.Equal(s1, s2) {
				t.Fatalf("row %d: order %v is not a permutation of %v", id, got, cands)
			}
			if !slices.Equal(got, best) {
				n++
				firsts[got[0]]++
			}
		}
		return n, firsts
	}
	n, firsts := explored(0.05, candidates)
	if n < rows*4/100 || n > rows*6/100 {
		t.Errorf("explore 0.05: %d of %d rows explored; want about 5%%", n, rows)
	}
	if firsts["b"] == 0 || firsts["c"] == 0 || firsts["a"] != 0 {
		t.Errorf("exploring rows asked first: %v; want b and c, never a (the best's first)", firsts)
	}
	if n, _ := explored(0, candidates); n != 0 {
		t.Errorf("explore 0: %d rows explored", n)
	}
	if n, _ := explored(0.5, []string{"a"}); n != 0 {
		t.Errorf("one vendor: %d rows explored", n)
	}
}

// A listed order puts the candidates in the list's order, the unlisted
// after them as given, and never adds a name.
func TestListedOrder(t *testing.T) {
	l := Listed{Names: []string{"pdl", "zz", "acme"}}
	got := l.Order(context.Background(), jobs.OrderQuery{Vendors: []string{"other", "acme", "pdl", "last"}})
	if want := []string{"pdl", "acme", "other", "last"}; !slices.Equal(got, want) {
		t.Errorf("Order = %v; want %v", got, want)
	}
}

// failingRates refuses writes until ok is set, and keeps what it took.
type failingRates struct {
	ok   bool
	took []store.VendorRate
}

func (f *failingRates) AddVendorRates(_ context.Context, incs []store.VendorRate) error {
	if !f.ok {
		return errors.New("postgres is away")
	}
	f.took = append(f.took, incs...)
	return nil
}
func (f *failingRates) VendorRates(context.Context) ([]store.VendorRate, error) { return nil, nil }
func (f *failingRates) TenantVendorRates(context.Context, string) ([]store.VendorRate, error) {
	return nil, nil
}

// Observe batches: nothing is written before FlushAt rows are pending; a
// write that fails keeps them pending, summed with what came meanwhile,
// and the next one writes them all. Stages that are not stages are not
// counted.
func TestObserveBatchesAndKeepsWhatFailed(t *testing.T) {
	ctx := context.Background()
	f := &failingRates{}
	a := New(nil, f, Options{FlushAt: 2})
	obs := func(vendor string, found bool) jobs.Observation {
		return jobs.Observation{Vendor: vendor, Segment: nameDomainFR, Stage: domain.StageProfile, Found: found, Credits: 2}
	}
	if err := a.Observe(ctx, []jobs.Observation{obs("a", true), obs("a", false), {Vendor: "a", Stage: domain.StageBulk}}); err != nil {
		t.Fatal(err) // one row pending: no write yet
	}
	if err := a.Observe(ctx, []jobs.Observation{obs("b", true)}); err == nil {
		t.Fatal("a failed write: Observe = nil; want its error")
	}
	if err := a.Observe(ctx, []jobs.Observation{obs("a", true)}); err == nil {
		t.Fatal("still failing: Observe = nil; want its error")
	}
	f.ok = true
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]store.VendorRate{}
	for _, r := range f.took {
		got[r.Vendor] = r
	}
	if r := got["a"]; len(f.took) != 2 || r.Asked != 3 || r.Found != 2 || r.Credits != 6 || got["b"].Asked != 1 {
		t.Errorf("written %+v; want a asked 3, found 2, credits 6 and b asked 1", f.took)
	}
}
