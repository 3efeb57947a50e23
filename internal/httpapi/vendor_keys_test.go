package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/service"
)

// GET /v1/vendors shows what the workers noted of each vendor's key: the
// balance split, overage spending and a plan hiding contact data, each
// with a warning; a vendor without a note has none.
func TestVendorsRouteKeyNotes(t *testing.T) {
	t.Parallel()
	vendors := config.Vendors{Explore: 0.05, List: []config.VendorSpec{
		{Name: "people", Kind: config.VendorPDL, URL: "https://p.example", Rate: 10, CreditValue: 1, Bulk: true, PriorHitRate: 0.5, BatchSize: 80},
		{Name: "seed", Kind: config.VendorSeed, URL: "https://s.example", Rate: 5, CreditValue: 1, PriorHitRate: 0.5},
	}}
	b := setup(t, func(d *deps) { d.svc.Vendors = vendors })
	ctx := context.Background()
	if err := b.Store.NoteVendorBalance(ctx, "people", 0, 250); err != nil {
		t.Fatal(err)
	}
	if err := b.Store.NoteContactsHidden(ctx, "people"); err != nil {
		t.Fatal(err)
	}
	resp, data := b.call(t, http.MethodGet, "/v1/vendors", keyA, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/vendors: %d %s", resp.StatusCode, data)
	}
	v := decode[service.Vendors](t, data)
	if len(v.Vendors) != 2 || v.Vendors[1].Key != nil {
		t.Fatalf("vendors %+v", v.Vendors)
	}
	k := v.Vendors[0].Key
	if k == nil || k.PurchasedRemaining == nil || *k.PurchasedRemaining != 0 || *k.OveragesRemaining != 250 || k.OverageSince == nil || k.ContactsHiddenAt == nil {
		t.Fatalf("people's key %+v", k)
	}
	w := strings.Join(v.Warnings, "\n")
	if !strings.Contains(w, "people's key has spent its purchased credits and spends into overage") || !strings.Contains(w, "250 overage credits left") ||
		!strings.Contains(w, "people's key is on a plan that hides contact data") || strings.Contains(w, "seed's key") {
		t.Fatalf("warnings %q", v.Warnings)
	}
	if !strings.Contains(string(data), `"purchased_remaining":0`) {
		t.Fatalf("the JSON does not name the figures: %s", data)
	}
}
