package store_test

import (
	"context"
	"testing"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A key's balance split and its plan's hidden contacts are kept per
// vendor: in overage from the first note without purchased credits until
// credits are bought again.
func TestVendorKeyNotes(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.NewDatabase(t))
	ctx := context.Background()
	if n, err := st.VendorKeyNotes(ctx); err != nil || len(n) != 0 {
		t.Fatalf("no notes: %+v, %v", n, err)
	}
	if err := st.NoteVendorBalance(ctx, "pdl", 10, 50); err != nil {
		t.Fatal(err)
	}
	n, err := st.VendorKeyNotes(ctx)
	if p := n["pdl"]; err != nil || p.PurchasedRemaining == nil || *p.PurchasedRemaining != 10 || *p.OveragesRemaining != 50 || p.OverageSince != nil || p.ContactsHiddenAt != nil {
		t.Fatalf("credits left: %+v, %v", p, err)
	}
	if err := st.NoteVendorBalance(ctx, "pdl", 0, 49); err != nil {
		t.Fatal(err)
	}
	n, _ = st.VendorKeyNotes(ctx)
	since := n["pdl"].OverageSince
	if since == nil || *n["pdl"].OveragesRemaining != 49 {
		t.Fatalf("into overage: %+v", n["pdl"])
	}
	if err := st.NoteVendorBalance(ctx, "pdl", 0, 48); err != nil {
		t.Fatal(err)
	}
	if err := st.NoteContactsHidden(ctx, "pdl"); err != nil {
		t.Fatal(err)
	}
	n, _ = st.VendorKeyNotes(ctx)
	if p := n["pdl"]; p.OverageSince == nil || !p.OverageSince.Equal(*since) || p.ContactsHiddenAt == nil || *p.OveragesRemaining != 48 {
		t.Fatalf("still in overage, contacts hidden: %+v", p)
	}
	if err := st.NoteVendorBalance(ctx, "pdl", 1000, 50); err != nil {
		t.Fatal(err)
	}
	if err := st.NoteContactsHidden(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	n, _ = st.VendorKeyNotes(ctx)
	if p := n["pdl"]; len(n) != 2 || p.OverageSince != nil || *p.PurchasedRemaining != 1000 || n["other"].PurchasedRemaining != nil {
		t.Fatalf("credits bought again: %+v", n)
	}
}
