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

// SeekStatements are the statements of an erasure and of the retention
// sweeps, as Postgres receives them, each with the indexes its generic plan
// must reach its rows by (an index that starts at what it removes or at
// what is due): the plan test reads them.
var SeekStatements = map[string]struct {
	SQL     string
	Indexes []string
}{
	"erasure: named rows": {numbered1(namedRowsSQL), []string{"job_rows_email", "email_results_email", "job_rows_profile_url",
		"profile_results_profile_url", "job_rows_name_company", "profile_results_name_company", "job_rows_name_domain",
		"job_rows_platform_member", "job_rows_pkey", "jobs_pkey"}},
	"erasure: rows of found": {numbered1(rowsOfFoundSQL), []string{"job_rows_profile_url", "profile_results_profile_url",
		"job_rows_email", "email_results_email", "job_rows_pkey"}},
	"erasure: ledger of rows":       {ledgerOfRowsSQL, []string{"credit_ledger_row"}},
	"erasure: ledger bulk of jobs":  {ledgerBulkOfJobsSQL, []string{"credit_ledger_job_bulk", "job_rows_pkey"}},
	"erasure: withdraw feed lines":  {withdrawFeedLinesSQL, []string{"results_feed_log_job_row", "job_rows_pkey"}},
	"erasure: delete cache keys":    {deleteCacheKeysSQL, []string{"lookup_cache_pkey"}},
	"erasure: delete claim keys":    {deleteClaimKeysSQL, []string{"lookup_claims_pkey"}},
	"erasure: delete last extras":   {deleteLastExtrasSQL, []string{"job_input_extras_pkey", "job_rows_input_row", "job_rows_pkey"}},
	"retention: next expired job":   {nextExpiredJobSQL, []string{"jobs_unpurged"}},
	"retention: abandoned jobs":     {abandonedJobsSQL, []string{"jobs_unfinished"}},
	"retention: purge rows":         {purgeRowsSQL, []string{"job_rows_job_id", "profile_results_row_id_key", "email_results_row_id_key", "phone_results_row_id_key", "no_matches_row_id_stage_key", "results_feed_log_job_row", "job_rows_pkey", "job_chunk_counts_pkey"}},
	"retention: purge extras":       {purgeExtrasSQL, []string{"job_input_extras_pkey"}},
	"retention: purge cache":        {purgeCacheSQL, []string{"lookup_cache_tenant_fetched"}},
	"retention: purge feed lines":   {purgeFeedSQL, []string{"results_feed_log_tenant_logged", "results_feed_log_pkey"}},
	"finisher: skip canceled rows":  {skipCanceledRowsSQL, []string{"jobs_open", "job_chunk_counts_pkey", "job_rows_chunk", "job_rows_pkey"}},
	"finisher: finish jobs":         {finishJobsSQL(""), []string{"jobs_open"}},
	"retention: purge change lines": {purgeChangesSQL, []string{"watch_changes_tenant_at", "watch_changes_pkey"}},
}

func numbered1(sql string) string { return numbered(map[string]string{"": sql})[""] }

// NamedRowsSQL and RowsOfFoundSQL are the erasure's finding statements
// with their named arguments (the explain harness runs them).
var NamedRowsSQL, RowsOfFoundSQL = namedRowsSQL, rowsOfFoundSQL

// ResultStatements are the statements that read a job's results, by what
// they do (arguments: job, after row id, state, then the page's limit or
// the keys' cap): the plan test reads their plans.
var ResultStatements = map[string]string{
	"results page":          listResultsSQL,
	"results download":      resultsSelect,
	"extra keys":            resultExtraKeysSQL,
	"extra keys of a state": resultExtraKeysOfStateSQL,
}
