package domain

// Stage is one kind of lookup done for a row: its profile, then its email,
// then its phone numbers.
type Stage string

// The stages, in the order a row goes through them.
const (
	StageProfile Stage = "profile"
	StageEmail   Stage = "email"
	StagePhone   Stage = "phone"
)

// Stages lists the stages in the order a row goes through them.
var Stages = []Stage{StageProfile, StageEmail, StagePhone}

// StageBulk is the stage the credit ledger records for a bulk call, which
// buys several stages of several rows at once. No row goes through it: it is
// not in Stages and not Valid.
const StageBulk Stage = "bulk"

// Valid reports whether s is one of Stages.
func (s Stage) Valid() bool {
	switch s {
	case StageProfile, StageEmail, StagePhone:
		return true
	}
	return false
}
