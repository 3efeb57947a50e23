package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// HonoursKeys says what enrichq has learned of the vendor behind account (a
// vendor key's id): known is false until the vendor was seen to replay an
// Idempotency-Key (or, one day, seen not to).
func (s *Store) HonoursKeys(ctx context.Context, account string) (honours, known bool, err error) {
	if account == "" {
		return false, false, nil
	}
	var h *bool
	err = s.pool.QueryRow(ctx, `SELECT honours_keys FROM vendor_accounts WHERE account = $1`, account).Scan(&h)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, interpretError(err)
	}
	if h == nil {
		return false, false, nil
	}
	return *h, true, nil
}

// LearnHonoursKeys records that the vendor behind account honours
// Idempotency-Key, learned from the replay answering ledger call by. The
// first replay is remembered; first says whether this call learned it.
func (s *Store) LearnHonoursKeys(ctx context.Context, account string, by int64) (first bool, err error) {
	if account == "" {
		return false, nil
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO vendor_accounts (account, honours_keys, learned_at, learned_from) VALUES ($1, true, now(), $2)
		ON CONFLICT (account) DO UPDATE SET honours_keys = true, learned_at = now(), learned_from = excluded.learned_from
		WHERE vendor_accounts.honours_keys IS DISTINCT FROM true`, account, by)
	if err != nil {
		return false, interpretError(err)
	}
	return tag.RowsAffected() == 1, nil
}
