package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// CacheEntry is a paid answer to remember: a hit (Result set) or a no-match.
type CacheEntry struct {
	// RowID is the row whose answer it is: SaveOutcomes writes the entry
	// only with that row's own outcome (the row still there, held under the
	// claim, its person not suppressed), so an answer bought for a row an
	// erasure removed in flight is never remembered.
	RowID     int64
	Stage     domain.Stage
	Key       string
	Matched   bool
	Result    []byte
	FetchedAt time.Time
}

var cachedAnswersSQL = `SELECT c.input_key, c.matched, coalesce(c.result::text, ''), c.fetched_at
	FROM unnest($3::text[]) AS k(key)
	CROSS JOIN LATERAL (SELECT * FROM lookup_cache c WHERE c.tenant = $1 AND c.stage = $2 AND c.input_key = k.key LIMIT 1) c
	WHERE c.fetched_at > $4`

// CachedAnswers returns the cached answers of a tenant for a stage and keys,
// fetched after newerThan, by key.
func (s *Store) CachedAnswers(ctx context.Context, tenant string, stage domain.Stage, keys []string, newerThan time.Time) (map[string]CacheEntry, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, nil
	}
	// One primary-key lookup per key, whatever the table's statistics say:
	// with "input_key = ANY($3)" and no statistics (a young table, autovacuum
	// off) the cached generic plan filtered every entry of the tenant's stage,
	// a scan that grew with every chunk saved.
	rows, err := s.pool.Query(ctx, cachedAnswersSQL, tenant, stage, keys, newerThan)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make(map[string]CacheEntry)
	var c CacheEntry
	var result string
	_, err = pgx.ForEachRow(rows, []any{&c.Key, &c.Matched, &result, &c.FetchedAt}, func() error {
		c.Stage = stage
		if result != "" {
			c.Result = []byte(result)
		}
		out[c.Key] = c
		c = CacheEntry{}
		return nil
	})
	return out, interpretError(err)
}
