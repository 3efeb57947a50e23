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

// StageVerify is the check of a found email address before a buyer sends to
// it (a verifier's answer: valid, invalid, accept_all, webmail, disposable,
// unknown). Only a vendor that sells verification answers it; it runs after
// the email stage, on the address that stage delivered.
const StageVerify Stage = "verify"

// Lookups lists what a job's `lookups` may ask, in the order a row gets
// them: the row stages, then the check of the email found (verify, which
// rides on the email stage: it needs it).
var Lookups = []Stage{StageProfile, StageEmail, StagePhone, StageVerify}

// Lookup reports whether s is one of Lookups: what a job may ask.
func (s Stage) Lookup() bool { return s.Valid() || s == StageVerify }

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
