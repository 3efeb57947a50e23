package enrich_test

import (
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/pdl"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	_ "github.com/enrichq/enrichq/internal/enrich/vendors"
)

// The largest call by the contract: 100 bulk rows of profile 2, email 10 and
// phone 25 at the seed (or the configured prices, when more); a batch of
// matches at 1 credit each at pdl. A credit_value that would take it past
// config.MaxUnits is refused where the adapter is built.
func TestBuildRefusesUnitsThatCouldOverflow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind enrich.Kind
		spec config.VendorSpec
		want int64
	}{
		{seed.Kind, config.VendorSpec{Kind: config.VendorSeed}, 3700},
		{seed.Kind, config.VendorSpec{Kind: config.VendorSeed, Prices: map[string]int64{"phone_mobile": 40}}, 5200},
		{pdl.Kind, config.VendorSpec{Kind: config.VendorPDL, BatchSize: 80}, 80},
		{pdl.Kind, config.VendorSpec{Kind: config.VendorPDL, BatchSize: 80, Prices: map[string]int64{"match": 3}}, 240},
	} {
		if got := tc.kind.MaxCallCharge(tc.spec); got != tc.want {
			t.Errorf("%s %+v: largest call %d, want %d", tc.spec.Kind, tc.spec.Prices, got, tc.want)
		}
	}
	s := config.VendorSpec{Name: "acme", Kind: config.VendorSeed, URL: "https://api.acme.example", Key: "k",
		CreditValue: config.MaxUnits/3700 + 1}
	if _, err := enrich.Build(s, enrich.BuildOptions{Describe: true}); err == nil || !strings.Contains(err.Error(), "could overflow") {
		t.Fatalf("credit_value %d: %v, want refused as could overflow", s.CreditValue, err)
	}
	s.CreditValue = config.MaxUnits / 3700
	if _, err := enrich.Build(s, enrich.BuildOptions{Describe: true}); err != nil {
		t.Fatalf("credit_value %d that fits: %v", s.CreditValue, err)
	}
}
