package store

import (
	"context"
	"errors"
)

// AuditVendorSuppressed is the audit line of a person a vendor said asked it
// to stop processing their data (a 451): the worker stored nothing of theirs
// from it and never asks it about them again.
const AuditVendorSuppressed = "vendor_suppressed"

// SuppressForVendor records that vendor must never be asked about the
// person of hash again. It reports whether the record is new.
func (s *Store) SuppressForVendor(ctx context.Context, vendor string, hash []byte) (bool, error) {
	if vendor == "" || len(hash) == 0 {
		return false, errors.New("store: a vendor suppression needs a vendor and a person hash")
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO vendor_suppressions (vendor, person_hash) VALUES ($1, $2) ON CONFLICT DO NOTHING`, vendor, hash)
	if err != nil {
		return false, interpretError(err)
	}
	return tag.RowsAffected() == 1, nil
}

// VendorSuppressed says which of hashes vendor must not be asked about: the
// indexes into hashes of those suppressed.
func (s *Store) VendorSuppressed(ctx context.Context, vendor string, hashes [][]byte) (map[int]bool, error) {
	out := map[int]bool{}
	if len(hashes) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT i - 1 FROM unnest($2::bytea[]) WITH ORDINALITY AS h(hash, i)
		WHERE EXISTS (SELECT 1 FROM vendor_suppressions v WHERE v.vendor = $1 AND v.person_hash = h.hash)`, vendor, hashes)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			return nil, interpretError(err)
		}
		out[i] = true
	}
	return out, interpretError(rows.Err())
}
