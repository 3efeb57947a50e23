package chaos

import (
	"testing"

	"github.com/enrichq/enrichq/internal/enrich/fakevendor"
)

// The definitions of double-charged and of the money check, on made-up
// ledgers.
func TestReconcile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                       string
		ours                       []ledgerRow
		vendor                     []fakevendor.LedgerEntry
		overcount, unexplained     int64
		double, extra, unknownCall int
	}{
		{
			name:   "settled calls match the bill",
			ours:   []ledgerRow{{key: "a", status: "settled", charged: 2}, {key: "b", status: "settled", charged: 5}},
			vendor: []fakevendor.LedgerEntry{{IdempotencyKey: "a", Endpoint: "profile", Inputs: []string{"x"}, Credits: 2}, {IdempotencyKey: "b", Endpoint: "email", Inputs: []string{"u"}, Credits: 5}},
		},
		{
			name: "a lost answer counted at its reservation, its retry replayed for free",
			ours: []ledgerRow{{key: "a", status: "unknown", reserved: 12, charged: 12}, {key: "a", status: "settled", charged: 0}},
			vendor: []fakevendor.LedgerEntry{
				{IdempotencyKey: "a", Endpoint: "bulk", Inputs: []string{"x", "y"}, Credits: 7},
			},
			overcount: 5, unknownCall: 1,
		},
		{
			name: "a retry under another key bills the inputs again",
			ours: []ledgerRow{{key: "a", status: "unknown", reserved: 24, charged: 24}, {key: "b", status: "settled", charged: 4}},
			vendor: []fakevendor.LedgerEntry{
				{IdempotencyKey: "a", Endpoint: "bulk", Inputs: []string{"x", "y"}, Credits: 4},
				{IdempotencyKey: "b", Endpoint: "bulk", Inputs: []string{"y", "x"}, Credits: 4},
			},
			overcount: 20, double: 2, extra: 2, unknownCall: 1,
		},
		{
			name: "a billed call recorded as free is unexplained",
			ours: []ledgerRow{{key: "a", status: "settled", charged: 0}},
			vendor: []fakevendor.LedgerEntry{
				{IdempotencyKey: "a", Endpoint: "profile", Inputs: []string{"x"}, Credits: 2},
			},
			unexplained: 2,
		},
		{
			name: "a miss of email costs nothing and is not a purchase",
			ours: []ledgerRow{{key: "a", status: "settled"}, {key: "b", status: "settled"}},
			vendor: []fakevendor.LedgerEntry{
				{IdempotencyKey: "a", Endpoint: "email", Inputs: []string{"u"}},
				{IdempotencyKey: "b", Endpoint: "email", Inputs: []string{"u"}},
			},
		},
		{
			name:   "other jobs' calls are not this job's",
			ours:   []ledgerRow{{key: "a", status: "settled", charged: 1}},
			vendor: []fakevendor.LedgerEntry{{IdempotencyKey: "a", Endpoint: "profile", Inputs: []string{"x"}, Credits: 1}, {IdempotencyKey: "z", Endpoint: "profile", Inputs: []string{"x"}, Credits: 1}},
		},
	}
	for _, c := range cases {
		f := Figures{DoubleCauses: map[string]int{}}
		reconcile(&f, c.ours, c.vendor)
		if f.Overcount != c.overcount || f.Unexplained != c.unexplained || f.DoubleCharged != c.double || f.ExtraBillings != c.extra || f.UnknownCalls != c.unknownCall {
			t.Errorf("%s: overcount %d unexplained %d double %d extra %d unknown %d; want %d %d %d %d %d", c.name,
				f.Overcount, f.Unexplained, f.DoubleCharged, f.ExtraBillings, f.UnknownCalls,
				c.overcount, c.unexplained, c.double, c.extra, c.unknownCall)
		}
	}
}
