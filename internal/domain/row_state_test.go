package domain

import "testing"

func TestRowStateCanBecome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, to RowState
		want     bool
	}{
		// Claims.
		{RowPending, RowInFlight, true},
		{RowRetryWait, RowInFlight, true},
		// Cancel of rows nobody holds.
		{RowPending, RowSkipped, true},
		{RowRetryWait, RowSkipped, true},
		// Outcomes of a claimed row.
		{RowInFlight, RowInFlight, true},
		{RowInFlight, RowPending, true},
		{RowInFlight, RowRetryWait, true},
		{RowInFlight, RowMatched, true},
		{RowInFlight, RowNoMatch, true},
		{RowInFlight, RowFailed, true},
		// A held row is released, then skipped by a cancel; skipped directly
		// only when its person was erased in flight (the store's save).
		{RowInFlight, RowSkipped, true},
		// Only a claim gives a result.
		{RowPending, RowMatched, false},
		{RowPending, RowRetryWait, false},
		{RowPending, RowFailed, false},
		{RowRetryWait, RowPending, false},
		{RowRetryWait, RowNoMatch, false},
		// Terminal states stay.
		{RowMatched, RowPending, false},
		{RowMatched, RowInFlight, false},
		{RowNoMatch, RowMatched, false},
		{RowFailed, RowPending, false},
		{RowFailed, RowRetryWait, false},
		{RowSkipped, RowPending, false},
		{RowSkipped, RowSkipped, false},
		// Unknown states go nowhere and come from nowhere.
		{RowInFlight, "", false},
		{RowInFlight, "done", false},
		{"", RowInFlight, false},
	}
	for _, tt := range tests {
		if got := tt.from.CanBecome(tt.to); got != tt.want {
			t.Errorf("%q.CanBecome(%q) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestRowStateKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s                     RowState
		open, terminal, valid bool
	}{
		{RowPending, true, false, true},
		{RowInFlight, true, false, true},
		{RowRetryWait, true, false, true},
		{RowMatched, false, true, true},
		{RowNoMatch, false, true, true},
		{RowFailed, false, true, true},
		{RowSkipped, false, true, true},
		{"", false, false, false},
		{"queued", false, false, false},
	}
	for _, tt := range tests {
		if got := tt.s.Open(); got != tt.open {
			t.Errorf("%q.Open() = %v, want %v", tt.s, got, tt.open)
		}
		if got := tt.s.Terminal(); got != tt.terminal {
			t.Errorf("%q.Terminal() = %v, want %v", tt.s, got, tt.terminal)
		}
		if got := tt.s.Valid(); got != tt.valid {
			t.Errorf("%q.Valid() = %v, want %v", tt.s, got, tt.valid)
		}
	}
}

// The table names only known states, every open state leads somewhere, and
// no terminal state leads anywhere.
func TestRowTransitionsTable(t *testing.T) {
	t.Parallel()
	for from, tos := range rowTransitions {
		if !from.Valid() {
			t.Errorf("transition from unknown state %q", from)
		}
		for _, to := range tos {
			if !to.Valid() {
				t.Errorf("transition %q -> unknown state %q", from, to)
			}
		}
	}
	for _, s := range RowStates {
		if n := len(rowTransitions[s]); s.Terminal() != (n == 0) {
			t.Errorf("%q: terminal %v with %d transitions", s, s.Terminal(), n)
		}
	}
	if len(RowStates) != 7 {
		t.Errorf("RowStates has %d states, want 7", len(RowStates))
	}
}
