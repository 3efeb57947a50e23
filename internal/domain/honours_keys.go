package domain

// HonoursKeys is whether enrichq takes the vendor to honour Idempotency-Key
// (replay a key's first answer for 24 h, charged 0). Only a vendor that
// honours keys lets a fresh answer to a retry prove that the earlier sends
// of its key were not billed.
type HonoursKeys string

// The settings of ENRICHQ_VENDOR_HONOURS_KEYS.
const (
	// HonoursKeysAuto: learned from the first replay the vendor is seen to
	// make, remembered per vendor key (vendor_accounts).
	HonoursKeysAuto HonoursKeys = "auto"
	// HonoursKeysTrue: taken to honour keys from the first call.
	HonoursKeysTrue HonoursKeys = "true"
	// HonoursKeysFalse: never taken to; earlier sends stay at their worst case.
	HonoursKeysFalse HonoursKeys = "false"
)

// Valid reports whether h is one of the settings.
func (h HonoursKeys) Valid() bool {
	switch h {
	case HonoursKeysAuto, HonoursKeysTrue, HonoursKeysFalse:
		return true
	}
	return false
}
