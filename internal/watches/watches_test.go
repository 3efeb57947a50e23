package watches_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/watches"
)

// A watch's slots fall at its time of day: the first a period after it is
// made, the next a period after a run (an overdue slot run once), the next
// month's first once a cap is reached; a new period counts from the last
// run, a resume skips the slots missed.
func TestSlots(t *testing.T) {
	t.Parallel()
	id := "5f0c8a3e-0000-4000-8000-000000000001"
	off := watches.DayOffset(id)
	if off < 0 || off >= 24*time.Hour || off != watches.DayOffset(id) || off == watches.DayOffset(id+"x") {
		t.Fatalf("offset %s: want a stable time of day per id", off)
	}
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	first := watches.FirstRun(id, 7*24*time.Hour, now)
	if want := watches.SlotAfter(day(2026, 3, 17).Add(12*time.Hour), off); !first.Equal(want) || first.Sub(day(2026, 3, 17)) >= 48*time.Hour {
		t.Errorf("first run %s, want %s", first, want)
	}
	if got := watches.NextAfterRun(first, 7*24*time.Hour, first.Add(20*24*time.Hour)); !got.Equal(first.Add(21 * 24 * time.Hour)) {
		t.Errorf("next after an overdue run %s", got)
	}
	if got := watches.NextMonthSlot(id, day(2026, 3, 1)); !got.Equal(day(2026, 4, 1).Add(off)) {
		t.Errorf("next month's slot %s", got)
	}
	if m := watches.MonthOf(time.Date(2026, 3, 31, 23, 0, 0, 0, time.FixedZone("x", -3600))); !m.Equal(day(2026, 4, 1)) {
		t.Errorf("month of a UTC April moment: %s", m)
	}
	every := 14 * 24 * time.Hour
	last := day(2026, 3, 3).Add(off)
	p := watches.Patch{Next: first, Every: &every, OldEvery: 7 * 24 * time.Hour, LastSlot: &last, Now: now}
	if got := watches.NextAfterPatch(id, p); !got.Equal(day(2026, 3, 17).Add(off)) {
		t.Errorf("a new period from the last run: %s", got)
	}
	p = watches.Patch{Next: day(2026, 2, 1).Add(off), OldEvery: 7 * 24 * time.Hour, Resumed: true, Now: now}
	if got := watches.NextAfterPatch(id, p); !got.Equal(watches.SlotAfter(now, off)) {
		t.Errorf("a resume: %s", got)
	}
	if watches.RunsPerMonth(7*24*time.Hour) != 4.29 || watches.PerMonth(10, 7*24*time.Hour) != 43 || watches.Left(30, 31) >= 0 {
		t.Error("month accounting")
	}
}

// What counts as a change: a first known value is none, a value gone is
// not_found_any_more (a company gone from a looked-up profile: left), a
// no-match after a match is a match not found any more and keeps what was
// known.
func TestCompare(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	fields := watches.Fields([]domain.Stage{domain.StageProfile, domain.StageEmail})
	if !slices.Equal(fields, []string{"company", "role", "location", "email"}) {
		t.Fatalf("fields %v", fields)
	}
	old := watches.Snapshot{Matched: &yes, Company: "Acme", Role: "CTO", Email: "a@acme.example"}
	snap, changes := watches.Compare(watches.Answer{Old: old, Profiled: true,
		New: watches.Snapshot{Matched: &yes, Company: "", Role: "CEO", Location: "Paris", Email: "a@acme.example"}}, fields)
	want := []watches.Change{{Field: "company", Old: "Acme", Kind: watches.ChangeLeft}, {Field: "role", Old: "CTO", New: "CEO", Kind: watches.ChangeChanged}}
	if !slices.Equal(changes, want) || snap.Company != "Acme" || snap.Role != "CEO" || snap.Location != "Paris" {
		t.Errorf("changes %v, snapshot %+v", changes, snap)
	}
	snap, changes = watches.Compare(watches.Answer{Old: old, New: watches.Snapshot{Matched: &no}}, fields)
	if len(changes) != 1 || changes[0].Kind != watches.ChangeNotFoundAnyMore || changes[0].Field != "match" || snap.Company != "Acme" || *snap.Matched {
		t.Errorf("a no-match: %v, %+v", changes, snap)
	}
	if _, changes = watches.Compare(watches.Answer{Old: old, New: watches.Snapshot{Matched: &yes, Email: "a@acme.example"}}, fields); len(changes) != 0 {
		t.Errorf("fields not looked up again (no profile): %v", changes)
	}
	if watches.ChangeStage("phones", []domain.Stage{domain.StageEmail}) != domain.StageEmail {
		t.Error("a change of a field the watch does not look up is filed under its first lookup")
	}
}

// The limits refuse the watch past the tenant's limit, a creation past the
// hour's quota (with the wait to its oldest), a run while one goes and a
// run sooner than the interval after the last asked for.
func TestLimits(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	l := watches.Limits{}.WithDefaults()
	if l.MaxPerTenant != 20 || l.CreatesPerHour != 10 || l.RunInterval != time.Hour {
		t.Fatalf("defaults %+v", l)
	}
	var limit *watches.LimitError
	if err := l.AdmitCreate(watches.CreateFacts{Watches: 20, Now: now}); !errors.As(err, &limit) || limit.Limit != 20 {
		t.Errorf("the 21st watch: %v", err)
	}
	if err := l.AdmitCreate(watches.CreateFacts{Watches: 19, Created: 9, Now: now}); err != nil {
		t.Errorf("the 20th watch, the 10th creation: %v", err)
	}
	var throttled *watches.ThrottleError
	if err := l.AdmitCreate(watches.CreateFacts{Created: 10, Oldest: now.Add(-40 * time.Minute), Now: now}); !errors.As(err, &throttled) || throttled.RetryAfter != 20*time.Minute {
		t.Errorf("the 11th creation in the hour: %v", err)
	}
	if err := l.AdmitRun(watches.RunFacts{InFlight: true, Now: now}); !errors.As(err, &throttled) || throttled.RetryAfter != watches.InFlightRetry {
		t.Errorf("a run while one goes: %v", err)
	}
	last := now.Add(-15 * time.Minute)
	if err := l.AdmitRun(watches.RunFacts{LastManual: &last, Now: now}); !errors.As(err, &throttled) || throttled.RetryAfter != 45*time.Minute {
		t.Errorf("a run 15 minutes after the last: %v", err)
	}
	last = now.Add(-time.Hour)
	if err := l.AdmitRun(watches.RunFacts{LastManual: &last, Now: now}); err != nil {
		t.Errorf("a run an hour after the last: %v", err)
	}
}
