package httpapi

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
)

// GET /v1/vendors lists the configured vendors, the rates the calling
// tenant's rows taught per segment and stage with p, E and E ÷ p, and the
// automatic order of each segment: a strong on fr, b on us, each first
// where it is strong. Another tenant's answers, the opposite and more of
// them, show in no count and pull the rates by a bounded amount only.
func TestVendorsRoute(t *testing.T) {
	t.Parallel()
	vendors := config.Vendors{Explore: 0.05, List: []config.VendorSpec{
		{Name: "a", Kind: config.VendorSeed, URL: "https://a.example", Rate: 10, CreditValue: 1, Bulk: true, PriorHitRate: 0.5},
		{Name: "b", Kind: config.VendorSeed, URL: "https://b.example", Rate: 5, CreditValue: 2, PriorHitRate: 0.5},
	}}
	b := setup(t, func(d *deps) { d.svc.Vendors = vendors })
	fr := domain.Segment{Kind: domain.InputNameDomain, Country: "fr"}
	us := domain.Segment{Kind: domain.InputNameDomain, Country: "us"}
	de := domain.Segment{Kind: domain.InputNameDomain, Country: "de"}
	if err := b.Store.AddVendorRates(context.Background(), []store.VendorRate{
		{Tenant: tenantA, Vendor: "a", Segment: fr, Stage: domain.StageProfile, Asked: 300, Found: 240, Credits: 600},
		{Tenant: tenantA, Vendor: "b", Segment: fr, Stage: domain.StageProfile, Asked: 100, Found: 10, Credits: 200},
		{Tenant: tenantA, Vendor: "a", Segment: us, Stage: domain.StageProfile, Asked: 100, Found: 10, Credits: 200},
		{Tenant: tenantA, Vendor: "b", Segment: us, Stage: domain.StageProfile, Asked: 100, Found: 90, Credits: 200},
		{Tenant: "stranger", Vendor: "a", Segment: fr, Stage: domain.StageProfile, Asked: 5000, Found: 0, Credits: 10000},
		{Tenant: "stranger", Vendor: "b", Segment: fr, Stage: domain.StageProfile, Asked: 5000, Found: 5000, Credits: 10000},
		{Tenant: "stranger", Vendor: "a", Segment: de, Stage: domain.StageProfile, Asked: 79, Found: 10, Credits: 158},
	}); err != nil {
		t.Fatal(err)
	}
	resp, data := b.call(t, http.MethodGet, "/v1/vendors", keyA, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/vendors: %d %s", resp.StatusCode, data)
	}
	v := decode[service.Vendors](t, data)
	if !slices.Equal(v.Order, []string{"auto"}) || v.Explore != 0.05 || len(v.Vendors) != 2 {
		t.Fatalf("vendors = %+v", v)
	}
	if a := v.Vendors[0]; a.Name != "a" || a.Kind != "seed" || a.CreditValue != 1 || a.Rate != 10 || !a.Bulk || a.FillsAll {
		t.Errorf("vendor a = %+v", a)
	}
	if len(v.Segments) < 2 || v.Segments[0].Segment != "name_domain/fr" || v.Segments[0].Asked != 400 {
		t.Fatalf("segments = %+v; want name_domain/fr first, 400 asks", v.Segments)
	}
	seg := map[string]service.VendorSegment{}
	for _, s := range v.Segments {
		seg[s.Segment] = s
	}
	if _, ok := seg["email/"]; !ok {
		t.Errorf("segments %v lack email/ (each kind's without a country)", seg)
	}
	if _, ok := seg["name_domain/de"]; ok || v.PoolWeight != 20 {
		t.Errorf("segments %v show the stranger's name_domain/de; pool_weight %v", seg, v.PoolWeight)
	}
	var aFR *service.VendorRate
	for i, r := range seg["name_domain/fr"].Rates {
		if r.Vendor == "a" && r.Stage == domain.StageProfile {
			aFR = &seg["name_domain/fr"].Rates[i]
		}
	}
	// p = (240 + 20·0 + 20·p₀) ÷ (300 + 20 + 20), p₀ = a's other segments
	// (us: 10 of 100) blended with its prior 0.5, 1/6: the stranger's 5000
	// misses count as 20 asks.
	if aFR == nil || aFR.Asked != 300 || aFR.Found != 240 || aFR.Credits != 600 || aFR.P < 0.71 || aFR.P > 0.72 ||
		aFR.ExpectedCharge != 2 || aFR.ChargePerAnswer == nil || *aFR.ChargePerAnswer < 2.5 || *aFR.ChargePerAnswer > 2.9 {
		t.Errorf("a on fr, profile = %+v", aFR)
	}
	profileOrder := func(s string) []string {
		for _, o := range seg[s].Orders {
			if slices.Equal(o.Stages, []domain.Stage{domain.StageProfile}) {
				return o.Order
			}
		}
		return nil
	}
	if got := profileOrder("name_domain/fr"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("name_domain/fr order = %v; want [a b]", got)
	}
	if got := profileOrder("name_domain/us"); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("name_domain/us order = %v; want [b a]", got)
	}
}
