package jobs_test

import (
	"slices"
	"testing"

	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
)

// What a key's fall between two quiet readings proves of its lost calls:
// only a fall that the answered calls plus the lost ones at nothing, at
// their proposed prices or at their worst add up to; anything else leaves
// them at their worst case (over the bill, never under).
func TestKeyUsageVerdict(t *testing.T) {
	t.Parallel()
	p := func(n int64) *int64 { return &n }
	answered := store.KeyUsageCall{ID: 1, Charged: 3}
	lostFound := store.KeyUsageCall{ID: 2, Unknown: true, Charged: 1, Proposed: p(1)}
	lostMiss := store.KeyUsageCall{ID: 3, Unknown: true, Charged: 1, Proposed: p(0)}
	lostUnasked := store.KeyUsageCall{ID: 4, Unknown: true, Charged: 1} // its row was not retried there
	for _, tc := range []struct {
		name  string
		fall  int64
		calls []store.KeyUsageCall
		want  []int64
	}{
		{"nothing lost", 3, []store.KeyUsageCall{answered}, nil},
		{"the proposals add up", 4, []store.KeyUsageCall{answered, lostFound, lostMiss}, []int64{1, 0}},
		{"nothing beyond the answered calls", 3, []store.KeyUsageCall{answered, lostFound, lostUnasked}, []int64{0, 0}},
		{"every lost call at its worst", 5, []store.KeyUsageCall{answered, lostFound, lostMiss}, []int64{1, 1}},
		{"worst, one not proposed", 5, []store.KeyUsageCall{answered, lostFound, lostUnasked}, []int64{1, 1}},
		{"between, one not proposed", 4, []store.KeyUsageCall{answered, lostFound, lostUnasked}, nil},
		// A found one's retry billed while the lost send never reached the
		// vendor: the proposals say 2, the fall 1 beyond the answered call.
		{"the proposals do not add up", 4, []store.KeyUsageCall{answered, lostFound, {ID: 5, Unknown: true, Charged: 1, Proposed: p(1)}}, nil},
		{"less than the answered calls", 2, []store.KeyUsageCall{answered, lostMiss}, nil},
		{"the quota renewed", -10, []store.KeyUsageCall{lostMiss}, nil},
	} {
		ku := store.KeyUsage{Quiet: true, Fall: tc.fall, Calls: tc.calls}
		if got := jobs.KeyUsageVerdict(tc.fall, ku); !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: prices %v, want %v", tc.name, got, tc.want)
		}
	}
}
