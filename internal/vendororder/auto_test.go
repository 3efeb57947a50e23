package vendororder_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
	"github.com/enrichq/enrichq/internal/vendororder"
)

// countingRates counts the reads of the rates.
type countingRates struct {
	*store.Store
	reads atomic.Int64
}

func (c *countingRates) VendorRates(ctx context.Context) ([]store.VendorRate, error) {
	c.reads.Add(1)
	return c.Store.VendorRates(ctx)
}

// Two vendors at one price: a finds 80% of the French rows and 20% of the
// American ones, b the other way round. One worker observes the answers
// and writes them; another reads them and orders each segment its own
// way: [a b] for name_domain/fr, [b a] for name_domain/us, reading
// Postgres only when it refreshes, never per row.
func TestLearnedOrderFlipsPerSegment(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	vs, err := vendororder.FromSpecs([]config.VendorSpec{
		{Name: "a", Kind: config.VendorSeed, URL: "https://a.example", CreditValue: 1, PriorHitRate: 0.5},
		{Name: "b", Kind: config.VendorSeed, URL: "https://b.example", CreditValue: 1, PriorHitRate: 0.5},
	})
	if err != nil {
		t.Fatal(err)
	}
	fr := domain.Segment{Kind: domain.InputNameDomain, Country: "fr"}
	us := domain.Segment{Kind: domain.InputNameDomain, Country: "us"}
	stages := []domain.Stage{domain.StageProfile}
	learner := vendororder.New(vs, st, vendororder.Options{FlushAt: 1 << 30})
	rates := &countingRates{Store: st}
	reg := prometheus.NewRegistry()
	reader := vendororder.New(vs, rates, vendororder.Options{Gauges: metrics.NewVendorRates(reg)})
	order := func(seg domain.Segment) []string {
		// Row 1 does not explore at the default share (the row that does is
		// another test's concern).
		return reader.Order(ctx, jobs.OrderQuery{Tenant: "t", Segment: seg, Stages: stages, Vendors: []string{"a", "b"}, RowID: 1})
	}
	if got := order(fr); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("before answers: %v; want the configured order [a b] (same priors)", got)
	}

	var obs []jobs.Observation
	answer := func(vendor string, seg domain.Segment, found int) {
		for i := range 200 {
			obs = append(obs, jobs.Observation{Vendor: vendor, Segment: seg, Stage: domain.StageProfile, Found: i < found, Credits: 2})
		}
	}
	answer("a", fr, 160)
	answer("b", fr, 40)
	answer("a", us, 40)
	answer("b", us, 160)
	if err := learner.Observe(ctx, obs); err != nil {
		t.Fatal(err)
	}
	if err := learner.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := reader.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	reads := rates.reads.Load()
	for range 1000 {
		if got := order(fr); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("name_domain/fr: %v; want [a b]", got)
		}
		if got := order(us); !slices.Equal(got, []string{"b", "a"}) {
			t.Fatalf("name_domain/us: %v; want [b a]", got)
		}
	}
	if n := rates.reads.Load() - reads; n != 0 {
		t.Errorf("ordering 2000 rows read the rates %d times; want 0", n)
	}
	hit := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "enrichq_vendor_hit_rate" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			hit[l["vendor"]+" "+l["segment"]+" "+l["stage"]] = m.GetGauge().GetValue()
		}
	}
	if h := hit["a name_domain/fr profile"]; h < 0.7 || h > 0.8 {
		t.Errorf("gauge of a on fr = %v (of %v); want about 0.75", h, hit)
	}
	if h := hit["a name_domain/us profile"]; h < 0.2 || h > 0.3 {
		t.Errorf("gauge of a on us = %v; want about 0.25", h)
	}
	e, _ := reader.Model().Estimate("a", fr, domain.StageProfile)
	if e.Asked != 200 || e.Found != 160 || e.Credits != 400 {
		t.Errorf("a on fr: %+v; want asked 200, found 160, credits 400", e)
	}
}
