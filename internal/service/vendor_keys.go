package service

import (
	"context"
	"fmt"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// VendorKey is what a vendor's answers said of its key (GET /v1/vendors):
// its balance split into purchased and overage credits, whether it spends
// into overage, and whether its plan hides contact data. The key is the
// deployment's, shared by every tenant.
type VendorKey = store.VendorKeyNote

// HiddenContactsRecent is how long an answer showing the key's plan hiding
// contact data keeps the warning up: a plan upgraded stops showing it.
const HiddenContactsRecent = 7 * 24 * time.Hour

// vendorKeys fills each vendor's Key from what the workers noted, and
// warns of a key spending into overage (billed at the overage rate, after
// the purchased credits) and of one whose plan hides contact data (its
// matches are paid for, their emails and phones bought again elsewhere).
func (s *Service) vendorKeys(ctx context.Context, out *Vendors) error {
	notes, err := s.store.VendorKeyNotes(ctx)
	if err != nil {
		return err
	}
	now := s.now()
	for i := range out.Vendors {
		info := &out.Vendors[i]
		n, ok := notes[info.Name]
		if !ok {
			continue
		}
		info.Key = &n
		if n.OverageSince != nil {
			left := "an unknown number of"
			if n.OveragesRemaining != nil {
				left = fmt.Sprint(*n.OveragesRemaining)
			}
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s's key has spent its purchased credits and spends into overage since %s (%s overage credits left): overage is billed afterwards, at the overage rate.",
				info.Name, n.OverageSince.UTC().Format("2006-01-02 15:04 UTC"), left))
		}
		if n.ContactsHiddenAt != nil && now.Sub(*n.ContactsHiddenAt) < HiddenContactsRecent {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s's key is on a plan that hides contact data (its matches say only whether an email or a phone exists, last seen %s): its matches answer profiles, their emails and phones are bought from the next vendor.",
				info.Name, n.ContactsHiddenAt.UTC().Format("2006-01-02 15:04 UTC")))
		}
	}
	return nil
}
