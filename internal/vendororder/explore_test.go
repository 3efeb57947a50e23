package vendororder

import (
	"context"
	"slices"
	"testing"

	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
)

// noRates is a Rates that holds nothing.
type noRates struct{}

func (noRates) AddVendorRates(context.Context, []store.VendorRate) error { return nil }
func (noRates) VendorRates(context.Context) ([]store.VendorRate, error)  { return nil, nil }

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
		a := New(vs, noRates{}, Options{Explore: share})
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
