package jobstest

import (
	"context"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// Observed is what a vendor answered for a segment and stage: what a
// worker's automatic order records (the test pipeline runs none).
type Observed struct {
	Tenant                string // "": the pool only
	Vendor                string
	Segment               domain.Segment
	Stage                 domain.Stage
	Asked, Found, Credits int64
}

// Observe records answers as a worker would, for the doors' tests, which
// reach the store only through the pipeline and the service.
func (b *Bundle) Observe(t testing.TB, obs ...Observed) {
	t.Helper()
	incs := make([]store.VendorRate, len(obs))
	for i, o := range obs {
		incs[i] = store.VendorRate{Tenant: o.Tenant, Vendor: o.Vendor, Segment: o.Segment, Stage: o.Stage, Asked: o.Asked, Found: o.Found, Credits: o.Credits}
	}
	if err := b.Store.AddVendorRates(context.Background(), incs); err != nil {
		t.Fatal(err)
	}
}
