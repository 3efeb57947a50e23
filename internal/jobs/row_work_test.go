package jobs

import (
	"errors"
	"fmt"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// A row ends matched or no_match once every stage the job wants is done,
// pending when the final save stops it before, and stays open otherwise.
func TestRowEndState(t *testing.T) {
	c := &chunkRun{p: &Processor{}, want: map[domain.Stage]bool{domain.StageProfile: true, domain.StageEmail: true}}
	for _, tc := range []struct {
		name  string
		done  []domain.Stage
		found string
		match bool
		final bool
		want  domain.RowState
	}{
		{"nothing done", nil, "", false, false, ""},
		{"nothing done, final", nil, "", false, true, domain.RowPending},
		{"profile found, email to go", []domain.Stage{domain.StageProfile}, "https://p.example/in/a", true, false, ""},
		{"profile found, email to go, final", []domain.Stage{domain.StageProfile}, "https://p.example/in/a", true, true, domain.RowPending},
		{"no profile: email not asked", []domain.Stage{domain.StageProfile}, "", false, false, domain.RowNoMatch},
		{"both done", []domain.Stage{domain.StageProfile, domain.StageEmail}, "https://p.example/in/a", true, false, domain.RowMatched},
	} {
		w := newRowWork(store.Row{ID: 1, StagesDone: tc.done, FoundProfileURL: tc.found, AnyMatch: tc.match})
		c.decideEnd(w, tc.final)
		if w.end != tc.want || w.dirty != (tc.want != "") {
			t.Errorf("%s: end %q dirty %v, want %q", tc.name, w.end, w.dirty, tc.want)
		}
		state, err := w.savedState()
		if want := tc.want; err != nil || (want == "" && state != domain.RowInFlight) || (want != "" && state != want) {
			t.Errorf("%s: saved as %q, %v", tc.name, state, err)
		}
	}
}

// A save refuses an end the row lifecycle does not allow a claimed row.
func TestRowSavedStateKeepsToTheLifecycle(t *testing.T) {
	for _, s := range domain.RowStates {
		w := newRowWork(store.Row{ID: 7})
		w.leave(s)
		_, err := w.savedState()
		if allowed := domain.RowInFlight.CanBecome(s); (err == nil) != allowed {
			t.Errorf("end %s: err %v, lifecycle allows it: %v", s, err, allowed)
		}
	}
}

// enrichq's own database failing before a call is "store unavailable" to
// the tenant, whatever the driver said.
func TestRowErrorOfTheStore(t *testing.T) {
	err := &storeError{err: errors.New("store: database unavailable: failed to connect to `user=postgres database=enrichq`: 10.0.0.5:5432 (db.internal): dial error")}
	if got := rowError(fmt.Errorf("reserve: %w", err)); got != "store unavailable" {
		t.Errorf("rowError = %q", got)
	}
}
