package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// ClaimLookups claims the right to buy the answers of keys (tenant, stage):
// it returns the keys this token won. A key held by another live claim is
// not won: its holder is calling the vendor, and its answer will be in
// lookup_cache. Expired claims (a lost worker) are taken over.
func (s *Store) ClaimLookups(ctx context.Context, tenant string, stage domain.Stage, keys []string, token string, ttl time.Duration) ([]string, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, claimLookupsSQL, tenant, stage, keys, token, ttl.Milliseconds())
	if err != nil {
		return nil, interpretError(err)
	}
	won, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return won, interpretError(err)
}

var claimLookupsSQL = `
	INSERT INTO lookup_claims (tenant, stage, input_key, token, expires_at)
	SELECT $1, $2, k, $4, now() + $5 * interval '1 millisecond' FROM unnest($3::text[]) AS k ORDER BY k COLLATE "C"
	ON CONFLICT (tenant, stage, input_key) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
		WHERE lookup_claims.expires_at < now() OR lookup_claims.token = excluded.token
	RETURNING input_key`

// lockedClaims is the FROM (or USING) item of an UPDATE or DELETE of
// "lookup_claims l" that takes the claims matching where, locked (lock: FOR
// UPDATE, or FOR UPDATE SKIP LOCKED) in the order ClaimLookups takes them,
// key order: every statement that locks several claims (claiming, extending,
// giving up, expiring) locks them in that one order, so two of them never
// wait for each other in a cycle. (ClaimLookups' ON CONFLICT locks a claim
// held by another live token too: a deadlock between it and a chunk's save
// was possible.)
//
// The join back to "l" is the planner's to choose: with the claims of one
// token use tokenClaims, which reaches them through the token's index.
func lockedClaims(where, lock string) string {
	return `(SELECT tenant, stage, input_key FROM lookup_claims WHERE ` + where + ` ORDER BY ` + claimKeyOrder + ` ` + lock + `) k
		WHERE l.tenant = k.tenant AND l.stage = k.stage AND l.input_key = k.input_key`
}

// tokenClaims is the WHERE clause of an UPDATE or DELETE of "lookup_claims l"
// that acts on the claims of the token in param, after locking them all in
// key order (as lockedClaims does, and for the same reason).
//
// The locks are taken by an uncorrelated subquery, an InitPlan run once
// before the first row is changed; the rows are then reached through the
// token's index. The join of lockedClaims let the planner guess: with no
// statistics on this table of short-lived rows (a young database, or
// autovacuum behind), a chunk's save hashed the whole table, live claims of
// every worker and dead ones alike, to find its own hundred.
func tokenClaims(param string) string {
	return `l.token = ` + param + ` AND (SELECT count(*) FROM (SELECT FROM lookup_claims WHERE token = ` + param + `
		ORDER BY ` + claimKeyOrder + ` FOR UPDATE) k) >= 0`
}

// claimKeyOrder is the one order in which statements lock several claims:
// the bytes of the key (ClaimLookups inserts its keys ORDER BY k COLLATE
// "C", with one tenant and stage). Named, not left to the columns'
// collation, so that the lock order does not hang on the schema.
const claimKeyOrder = `tenant COLLATE "C", stage COLLATE "C", input_key COLLATE "C"`

// ReleaseLookups gives up the claims of token (after its answers are in the cache, or on failure).
func (s *Store) ReleaseLookups(ctx context.Context, token string) error {
	_, err := s.pool.Exec(ctx, releaseLookupsSQL, token)
	return interpretError(err)
}

var releaseLookupsSQL = `DELETE FROM lookup_claims l WHERE ` + tokenClaims("$1")

// ExpireLookupClaims deletes claims past their expiry.
func (s *Store) ExpireLookupClaims(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM lookup_claims l USING `+lockedClaims("expires_at < now()", "FOR UPDATE SKIP LOCKED"))
	return tag.RowsAffected(), interpretError(err)
}
