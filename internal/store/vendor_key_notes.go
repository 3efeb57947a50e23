package store

import (
	"context"
	"time"
)

// VendorKeyNote is what a vendor's answers said of its key: the balance
// split into purchased and overage credits, whether (and since when) the key
// spends into overage, and when an answer last showed its plan hiding
// contact data.
type VendorKeyNote struct {
	Vendor string `json:"-"`
	// PurchasedRemaining and OveragesRemaining are the last split the vendor
	// sent; nil when it never did.
	PurchasedRemaining *int64 `json:"purchased_remaining"`
	OveragesRemaining  *int64 `json:"overages_remaining"`
	// OverageSince is when the key's purchased credits ran out, so that it
	// spends overage credits; nil while it has purchased credits left.
	OverageSince *time.Time `json:"overage_since"`
	// ContactsHiddenAt is when an answer last showed contact fields the
	// key's plan hides; nil when none did.
	ContactsHiddenAt *time.Time `json:"contacts_hidden_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
}

// NoteVendorBalance records the balance split of vendor's key as an answer
// sent it: purchased credits and overage credits left. The key is in
// overage from the first note with no purchased credits left until one
// with some.
func (s *Store) NoteVendorBalance(ctx context.Context, vendor string, purchased, overages int64) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO vendor_key_notes (vendor, purchased_remaining, overages_remaining, overage_since)
		VALUES ($1, $2::bigint, $3::bigint, CASE WHEN $2::bigint <= 0 THEN now() END)
		ON CONFLICT (vendor) DO UPDATE SET purchased_remaining = excluded.purchased_remaining,
			overages_remaining = excluded.overages_remaining, updated_at = now(),
			overage_since = CASE WHEN excluded.purchased_remaining > 0 THEN NULL
				ELSE coalesce(vendor_key_notes.overage_since, now()) END`, vendor, purchased, overages)
	return interpretError(err)
}

// NoteContactsHidden records that an answer of vendor showed contact data
// its key's plan hides.
func (s *Store) NoteContactsHidden(ctx context.Context, vendor string) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO vendor_key_notes (vendor, contacts_hidden_at) VALUES ($1, now())
		ON CONFLICT (vendor) DO UPDATE SET contacts_hidden_at = now(), updated_at = now()`, vendor)
	return interpretError(err)
}

// VendorKeyNotes are the notes of every vendor that has one, by vendor.
func (s *Store) VendorKeyNotes(ctx context.Context) (map[string]VendorKeyNote, error) {
	rows, err := s.pool.Query(ctx, `SELECT vendor, purchased_remaining, overages_remaining, overage_since,
		contacts_hidden_at, updated_at FROM vendor_key_notes`)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := map[string]VendorKeyNote{}
	for rows.Next() {
		var n VendorKeyNote
		if err := rows.Scan(&n.Vendor, &n.PurchasedRemaining, &n.OveragesRemaining, &n.OverageSince, &n.ContactsHiddenAt, &n.UpdatedAt); err != nil {
			return nil, interpretError(err)
		}
		out[n.Vendor] = n
	}
	return out, interpretError(rows.Err())
}
