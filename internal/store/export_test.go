package store

import "github.com/jackc/pgx/v5/pgxpool"

// HotStatements are the statements a worker runs for every chunk (or every
// few), by what they do: the plan test reads their generic plans.
var HotStatements = map[string]string{
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
}

// PoolForTest is the store's pool, for this package's tests: they check the
// schema, plans and rows with SQL of their own.
func PoolForTest(s *Store) *pgxpool.Pool { return s.pool }
