package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// HotStatements are the statements a worker runs for every chunk (or every
// few), by what they do, as Postgres receives them (named arguments
// numbered): the plan test reads their generic plans.
var HotStatements = numbered(map[string]string{
	"claim chunk":     claimChunkSQL,
	"cached answers":  cachedAnswersSQL,
	"claim lookups":   claimLookupsSQL,
	"save outcomes":   saveOutcomesSQL,
	"release lookups": releaseLookupsSQL,
	"extend claims":   extendClaimsSQL,
	"skip canceled":   skipCanceledRowsOfJobSQL,
	"finish job":      finishJobSQL,
	"dispatch next":   dispatchNextSQL,
	"next due":        nextDueSQL,
})

// numbered rewrites @name placeholders to $n, as pgx does for NamedArgs.
func numbered(stmts map[string]string) map[string]string {
	for name, sql := range stmts {
		rewritten, _, err := pgx.NamedArgs{}.RewriteQuery(context.Background(), nil, sql, nil)
		if err != nil {
			panic("store: number the placeholders of " + name + ": " + err.Error())
		}
		stmts[name] = rewritten
	}
	return stmts
}

// PoolForTest is the store's pool, for this package's tests: they check the
// schema, plans and rows with SQL of their own.
func PoolForTest(s *Store) *pgxpool.Pool { return s.pool }

// Setting is a session setting as the pool's connections see it.
func (s *Store) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v)
	return v, err
}

// PoolSize is the pool's MaxConns.
func (s *Store) PoolSize() int32 { return s.pool.Config().MaxConns }

// Exec runs sql, for tests that set up what the Go API cannot.
func (s *Store) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := s.pool.Exec(ctx, sql, args...)
	return err
}

// Count runs a count(*) query.
func (s *Store) Count(ctx context.Context, sql string, args ...any) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

// ResultStatements are the statements that read a job's results, by what
// they do (arguments: job, after row id, state, then the page's limit or
// the keys' cap): the plan test reads their plans.
var ResultStatements = map[string]string{
	"results page":          listResultsSQL,
	"results download":      resultsSelect,
	"extra keys":            resultExtraKeysSQL,
	"extra keys of a state": resultExtraKeysOfStateSQL,
}
