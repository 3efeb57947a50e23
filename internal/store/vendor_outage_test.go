package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// An operator brings a vendor back into a tenant's waterfall (or every
// tenant's) before its outage ends; another vendor stays out.
func TestBringVendorBack(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	for _, tv := range [][2]string{{"acme", "hunter"}, {"globex", "hunter"}, {"acme", "pdl"}} {
		if _, err := st.TakeVendorOut(ctx, tv[0], tv[1], "out of credits (429)", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.BringVendorBack(ctx, "hunter", "acme"); err != nil || n != 1 {
		t.Fatalf("back for acme: %d, %v", n, err)
	}
	out, _ := st.VendorsOut(ctx, "acme")
	if len(out) != 1 || out[0].Vendor != "pdl" {
		t.Fatalf("acme's vendors out %+v, want pdl alone", out)
	}
	if n, err := st.BringVendorBack(ctx, "hunter", ""); err != nil || n != 1 {
		t.Fatalf("back for every tenant: %d, %v", n, err)
	}
	if out, _ := st.VendorsOut(ctx, "globex"); len(out) != 0 {
		t.Fatalf("globex's vendors out %+v", out)
	}
}
