package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Suppressions returns a tenant's suppression list: each keyed hash of an
// erased person's input (as a string of its bytes) with when the erasure
// that holds it was made (the earliest, when several do). Lifted erasures
// hold none.
func (s *Store) Suppressions(ctx context.Context, tenant string) (map[string]time.Time, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT s.person_hash, min(e.created_at) FROM suppressions s JOIN erasures e ON e.id = s.erasure_id
		WHERE s.tenant = $1 AND e.lifted_at IS NULL GROUP BY s.person_hash`, tenant)
	if err != nil {
		return nil, interpretError(err)
	}
	out := map[string]time.Time{}
	var h []byte
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&h, &at}, func() error {
		out[string(h)] = at.UTC()
		return nil
	})
	return out, interpretError(err)
}
