package watches

import (
	"slices"

	"github.com/enrichq/enrichq/internal/domain"
)

// Kinds of change lines.
const (
	ChangeChanged = "changed"
	// ChangeLeft: the person is still found, with no company any more.
	ChangeLeft = "left"
	// ChangeNotFoundAnyMore: a field (or, field "match", the whole person)
	// found before is not found now. What was known is kept.
	ChangeNotFoundAnyMore = "not_found_any_more"
)

// EventPersonChanged is the webhook event of a run that found people at
// another company.
const EventPersonChanged = "person.changed"

// Snapshot is an input's last known answer, or a run's new one.
type Snapshot struct {
	Matched                                *bool // nil: never answered
	Company, Role, Email, Phones, Location string
}

// Field is the value of a watched field.
func (s Snapshot) Field(f string) string {
	switch f {
	case "company":
		return s.Company
	case "role":
		return s.Role
	case "email":
		return s.Email
	case "phones":
		return s.Phones
	default:
		return s.Location
	}
}

func (s *Snapshot) set(f, v string) {
	switch f {
	case "company":
		s.Company = v
	case "role":
		s.Role = v
	case "email":
		s.Email = v
	case "phones":
		s.Phones = v
	default:
		s.Location = v
	}
}

// FieldStage is the lookup that answers a field.
func FieldStage(f string) domain.Stage {
	switch f {
	case "email":
		return domain.StageEmail
	case "phones":
		return domain.StagePhone
	}
	return domain.StageProfile
}

// Fields are the fields a watch's lookups answer, in the order their
// changes are reported.
func Fields(lookups []domain.Stage) []string {
	fields := []string{}
	for _, f := range []string{"company", "role", "location", "email", "phones"} {
		if slices.Contains(lookups, FieldStage(f)) {
			fields = append(fields, f)
		}
	}
	return fields
}

// Answer is one input's snapshot beside a run's answer for it. New.Matched
// is set: the run answered (matched or no match).
type Answer struct {
	Old, New Snapshot
	// Profiled: the run looked the profile up (company, role and location
	// answered, not only carried).
	Profiled bool
}

// Change is one change of a field between an answer and the snapshot.
type Change struct {
	Field, Old, New, Kind string
}

// Compare is the input's next snapshot and the changes of its answer: a
// no-match keeps what was known, a first known value is no change.
func Compare(a Answer, fields []string) (Snapshot, []Change) {
	var changes []Change
	snap := a.Old
	if !*a.New.Matched {
		if a.Old.Matched != nil && *a.Old.Matched {
			changes = append(changes, Change{Field: "match", Old: "matched", Kind: ChangeNotFoundAnyMore})
		}
		f := false
		snap.Matched = &f
		return snap, changes
	}
	for _, f := range fields {
		o, n := a.Old.Field(f), a.New.Field(f)
		switch {
		case o == n:
		case o == "":
			snap.set(f, n) // first known: no change to report
		case n == "" && f == "company" && a.Profiled:
			changes = append(changes, Change{Field: f, Old: o, Kind: ChangeLeft})
		case n == "":
			if f != "company" && f != "role" && f != "location" || a.Profiled {
				changes = append(changes, Change{Field: f, Old: o, Kind: ChangeNotFoundAnyMore})
			}
		default:
			changes = append(changes, Change{Field: f, Old: o, New: n, Kind: ChangeChanged})
			snap.set(f, n)
		}
	}
	t := true
	snap.Matched = &t
	return snap, changes
}

// ChangeStage is the stage a change's feed line is filed under: the
// field's, or the watch's first lookup when the field's is not one of its.
func ChangeStage(field string, lookups []domain.Stage) domain.Stage {
	stage := FieldStage(field)
	if !slices.Contains(lookups, stage) && len(lookups) > 0 {
		stage = lookups[0]
	}
	return stage
}
