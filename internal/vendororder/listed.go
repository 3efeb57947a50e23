package vendororder

import (
	"context"
	"slices"

	"github.com/enrichq/enrichq/internal/jobs"
)

// Listed is the order the vendors file gives (order: [a, b]): the
// candidates in the list's order, those it does not name after them as
// given. It learns nothing.
type Listed struct{ Names []string }

var _ jobs.Orderer = Listed{}

// Order sorts q.Vendors by their place in the list.
func (l Listed) Order(_ context.Context, q jobs.OrderQuery) []string {
	out := slices.Clone(q.Vendors)
	place := func(name string) int {
		if i := slices.Index(l.Names, name); i >= 0 {
			return i
		}
		return len(l.Names)
	}
	slices.SortStableFunc(out, func(a, b string) int { return place(a) - place(b) })
	return out
}

// Observe does nothing.
func (Listed) Observe(context.Context, []jobs.Observation) error { return nil }
