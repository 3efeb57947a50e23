package rig

import (
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/store"
)

// The definitions of double-charged and of the money check, on made-up
// ledgers.
func TestReconcile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                       string
		ours                       []store.LedgerEntry
		vendor                     []enrichtest.SeedLedgerEntry
		overcount, unexplained     int64
		double, extra, unknownCall int
	}{
		{
			name:   "settled calls match the bill",
			ours:   []store.LedgerEntry{{IdempotencyKey: "a", Status: "settled", Charged: 2}, {IdempotencyKey: "b", Status: "settled", Charged: 5}},
			vendor: []enrichtest.SeedLedgerEntry{{IdempotencyKey: "a", Endpoint: "profile", Inputs: []string{"x"}, Credits: 2}, {IdempotencyKey: "b", Endpoint: "email", Inputs: []string{"u"}, Credits: 5}},
		},
		{
			name: "a lost answer counted at its reservation, its retry replayed for free",
			ours: []store.LedgerEntry{{IdempotencyKey: "a", Status: "unknown", Reserved: 12, Charged: 12}, {IdempotencyKey: "a", Status: "settled", Charged: 0}},
			vendor: []enrichtest.SeedLedgerEntry{
				{IdempotencyKey: "a", Endpoint: "bulk", Inputs: []string{"x", "y"}, Credits: 7},
			},
			overcount: 5, unknownCall: 1,
		},
		{
			name: "a retry under another key bills the inputs again",
			ours: []store.LedgerEntry{{IdempotencyKey: "a", Status: "unknown", Reserved: 24, Charged: 24}, {IdempotencyKey: "b", Status: "settled", Charged: 4}},
			vendor: []enrichtest.SeedLedgerEntry{
				{IdempotencyKey: "a", Endpoint: "bulk", Inputs: []string{"x", "y"}, Credits: 4},
				{IdempotencyKey: "b", Endpoint: "bulk", Inputs: []string{"y", "x"}, Credits: 4},
			},
			overcount: 20, double: 2, extra: 2, unknownCall: 1,
		},
		{
			name: "a billed call recorded as free is unexplained",
			ours: []store.LedgerEntry{{IdempotencyKey: "a", Status: "settled", Charged: 0}},
			vendor: []enrichtest.SeedLedgerEntry{
				{IdempotencyKey: "a", Endpoint: "profile", Inputs: []string{"x"}, Credits: 2},
			},
			unexplained: 2,
		},
		{
			name: "a miss of email costs nothing and is not a purchase",
			ours: []store.LedgerEntry{{IdempotencyKey: "a", Status: "settled"}, {IdempotencyKey: "b", Status: "settled"}},
			vendor: []enrichtest.SeedLedgerEntry{
				{IdempotencyKey: "a", Endpoint: "email", Inputs: []string{"u"}},
				{IdempotencyKey: "b", Endpoint: "email", Inputs: []string{"u"}},
			},
		},
		{
			name:   "other jobs' calls are not this job's",
			ours:   []store.LedgerEntry{{IdempotencyKey: "a", Status: "settled", Charged: 1}},
			vendor: []enrichtest.SeedLedgerEntry{{IdempotencyKey: "a", Endpoint: "profile", Inputs: []string{"x"}, Credits: 1}, {IdempotencyKey: "z", Endpoint: "profile", Inputs: []string{"x"}, Credits: 1}},
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

// A row's figures: its state, attempts and lease expiries, and a terminal
// row whose results contradict its state counted as half-written.
func TestCountRow(t *testing.T) {
	t.Parallel()
	profile := &store.ProfileResult{ProfileURL: "https://platform.example/in/a"}
	rows := []store.Result{
		{State: domain.RowMatched, Profile: profile, Attempts: 2},
		{State: domain.RowMatched}, // no result
		{State: domain.RowNoMatch, NoMatches: []domain.Stage{domain.StageProfile}},
		{State: domain.RowNoMatch},                                                                   // no marker
		{State: domain.RowNoMatch, Profile: profile, NoMatches: []domain.Stage{domain.StageProfile}}, // a result
		{State: domain.RowFailed, StateReason: "vendor rejected the input: " + strings.Repeat("x", 80), Attempts: 5},
		{State: domain.RowSkipped}, // no reason
		{State: domain.RowPending, LastError: "lease expired: worker lost"},
		{State: domain.RowInFlight},
	}
	f := Figures{States: map[string]int{}, FailedReasons: map[string]int{}}
	for _, r := range rows {
		countRow(&f, r)
	}
	reason := ("vendor rejected the input: " + strings.Repeat("x", 80))[:60]
	if f.Stored != 9 || f.Terminal != 7 || f.Open != 2 || f.Inconsistent != 4 || f.MaxAttempts != 5 || f.LeaseExpired != 1 ||
		f.States["no_match"] != 3 || len(f.FailedReasons) != 1 || f.FailedReasons[reason] != 1 {
		t.Errorf("figures %+v", f)
	}
}
