package vendororder

import (
	"context"

	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/jobs"
)

// Listed is the order the vendors file gives (order: [a, b]): the
// candidates in the list's order, those it does not name after them as
// given. It learns nothing.
type Listed struct{ Names []string }

var _ jobs.Orderer = Listed{}

// Order sorts q.Vendors by their place in the list (enrich.Ordered).
func (l Listed) Order(_ context.Context, q jobs.OrderQuery) []string {
	return enrich.Ordered(l.Names, q.Vendors, true)
}

// Observe does nothing.
func (Listed) Observe(context.Context, []jobs.Observation) error { return nil }
