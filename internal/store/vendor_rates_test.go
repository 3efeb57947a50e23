package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// Increments add up per (vendor, segment, stage), those of one row within
// a batch too, and workers adding at once lose none.
func TestVendorRatesAddUp(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	fr := domain.Segment{Kind: domain.InputNameDomain, Country: "fr"}
	us := domain.Segment{Kind: domain.InputNameDomain, Country: "us"}
	if err := st.AddVendorRates(ctx, []store.VendorRate{
		{Vendor: "a", Segment: fr, Stage: domain.StageProfile, Asked: 1, Found: 1, Credits: 2},
		{Vendor: "a", Segment: fr, Stage: domain.StageProfile, Asked: 1, Credits: 2},
		{Vendor: "b", Segment: us, Stage: domain.StageEmail, Asked: 1, Found: 1, Credits: 1},
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			batch := []store.VendorRate{
				{Vendor: "b", Segment: us, Stage: domain.StageEmail, Asked: 1},
				{Vendor: "a", Segment: fr, Stage: domain.StageProfile, Asked: 1, Found: 1, Credits: 2},
			}
			if i%2 == 1 {
				batch[0], batch[1] = batch[1], batch[0]
			}
			if err := st.AddVendorRates(ctx, batch); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := st.VendorRates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.VendorRate{
		{Vendor: "a", Segment: fr, Stage: domain.StageProfile, Asked: 10, Found: 9, Credits: 20},
		{Vendor: "b", Segment: us, Stage: domain.StageEmail, Asked: 9, Found: 1, Credits: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("VendorRates = %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %+v; want %+v", i, got[i], want[i])
		}
	}
}

// A tenant's increments add to its own rows and to the pool; another
// tenant's add to the pool only, and an increment of no tenant to the pool
// alone.
func TestTenantVendorRatesAreTheTenantsOwn(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	de := domain.Segment{Kind: domain.InputNameDomain, Country: "de"}
	if err := st.AddVendorRates(ctx, []store.VendorRate{
		{Tenant: "t1", Vendor: "a", Segment: de, Stage: domain.StageProfile, Asked: 3, Found: 2, Credits: 6},
		{Tenant: "t2", Vendor: "a", Segment: de, Stage: domain.StageProfile, Asked: 5, Found: 0, Credits: 10},
		{Tenant: "t1", Vendor: "a", Segment: de, Stage: domain.StageEmail, Asked: 2, Found: 1, Credits: 5},
		{Vendor: "a", Segment: de, Stage: domain.StageProfile, Asked: 1, Found: 1, Credits: 2},
	}); err != nil {
		t.Fatal(err)
	}
	own, err := st.TenantVendorRates(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.VendorRate{
		{Tenant: "t1", Vendor: "a", Segment: de, Stage: domain.StageEmail, Asked: 2, Found: 1, Credits: 5},
		{Tenant: "t1", Vendor: "a", Segment: de, Stage: domain.StageProfile, Asked: 3, Found: 2, Credits: 6},
	}
	if len(own) != len(want) || own[0] != want[0] || own[1] != want[1] {
		t.Errorf("t1's rates %+v; want %+v", own, want)
	}
	if other, err := st.TenantVendorRates(ctx, "t3"); err != nil || len(other) != 0 {
		t.Errorf("a tenant without answers has %+v, %v", other, err)
	}
	pool, err := st.VendorRates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantPool := []store.VendorRate{
		{Vendor: "a", Segment: de, Stage: domain.StageEmail, Asked: 2, Found: 1, Credits: 5},
		{Vendor: "a", Segment: de, Stage: domain.StageProfile, Asked: 9, Found: 3, Credits: 18},
	}
	if len(pool) != len(wantPool) || pool[0] != wantPool[0] || pool[1] != wantPool[1] {
		t.Errorf("the pool %+v; want %+v", pool, wantPool)
	}
}
