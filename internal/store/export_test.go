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
	"erasure: named members": {numbered1(namedMembersSQL), []string{"platform_members_email", "platform_members_profile_url",
		"platform_members_url"}},
	"erasure: members of emails": {numbered1(membersOfEmailsSQL), []string{"platform_members_email"}},
	"erasure: watch inputs": {numbered1(eraseFromWatchesSQL), []string{"watch_inputs_email", "watch_inputs_snap_email",
		"watch_inputs_profile_url", "watch_inputs_found_profile_url", "watch_inputs_name_company", "watch_inputs_name_domain",
		"watch_runs_job_id_key", "watch_inputs_pkey", "watches_pkey", "watch_changes_input"}},
	"erasure: ledger of rows":        {ledgerOfRowsSQL, []string{"credit_ledger_row"}},
	"erasure: ledger bulk of jobs":   {ledgerBulkOfJobsSQL, []string{"credit_ledger_job_chunk_bulk", "job_rows_pkey"}},
	"erasure: ledger bulk of chunks": {ledgerBulkOfChunksSQL, []string{"job_rows_pkey", "credit_ledger_job_chunk_bulk", "credit_ledger_pkey"}},
	"erasure: withdraw feed lines":   {withdrawFeedLinesSQL, []string{"results_feed_log_job_row", "job_rows_pkey"}},
	"erasure: delete cache keys":     {deleteCacheKeysSQL, []string{"lookup_cache_pkey"}},
	"erasure: delete claim keys":     {deleteClaimKeysSQL, []string{"lookup_claims_pkey"}},
	"erasure: delete last extras":    {deleteLastExtrasSQL, []string{"job_input_extras_pkey", "job_rows_input_row", "job_rows_pkey"}},
	"erasure: delete results":        {deleteOfRowsSQL("profile_results"), []string{"profile_results_row_id_key", "profile_results_pkey"}},
	"erasure: delete markers":        {deleteOfRowsSQL("no_matches"), []string{"no_matches_row_id_stage_key", "no_matches_pkey"}},
	"erasure: rewrite ledger keys":   {rewriteLedgerKeysSQL, []string{"credit_ledger_pkey"}},
	"retention: next expired job":    {nextExpiredJobSQL, []string{"jobs_unpurged"}},
	"retention: abandoned jobs":      {abandonedJobsSQL, []string{"jobs_unfinished"}},
	"retention: purge rows":          {purgeRowsSQL, []string{"job_rows_job_id", "profile_results_row_id_key", "email_results_row_id_key", "phone_results_row_id_key", "no_matches_row_id_stage_key", "results_feed_log_job_row", "job_rows_pkey", "job_chunk_counts_pkey"}},
	"retention: purge extras":        {purgeExtrasSQL, []string{"job_input_extras_pkey"}},
	"retention: purge cache":         {purgeCacheSQL, []string{"lookup_cache_tenant_fetched"}},
	"retention: purge feed lines":    {purgeFeedSQL, []string{"results_feed_log_tenant_logged", "results_feed_log_pkey"}},
	"finisher: skip canceled rows":   {skipCanceledRowsSQL, []string{"jobs_open", "job_chunk_counts_pkey", "job_rows_chunk", "job_rows_pkey"}},
	"finisher: finish jobs":          {finishJobsSQL(""), []string{"jobs_open"}},
	"retention: purge change lines":  {purgeChangesSQL, []string{"watch_changes_tenant_at", "watch_changes_pkey"}},
	"status: job and counts":         {jobStatusSQL, []string{"jobs_pkey", "job_chunk_counts_pkey"}},
	"status: unsettled calls":        {jobUnsettledSQL, []string{"credit_ledger_job_open", "credit_ledger_job_key"}},
}

// ErasureArrayStatements are the erasure's statements that take arrays of
// the person's values, rows or keys, each with the indexes its plan for
// hundreds of them must reach its rows by: the plan test reads them.
var ErasureArrayStatements = map[string]struct {
	SQL     string
	Indexes []string
}{
	"rows of found": {numbered1(rowsOfFoundSQL), []string{"job_rows_profile_url", "profile_results_profile_url",
		"job_rows_email", "email_results_email", "job_rows_pkey"}},
	"withdraw feed lines":     {withdrawFeedLinesSQL, []string{"results_feed_log_job_row", "job_rows_pkey", "results_feed_log_pkey"}},
	"delete profile results":  {deleteOfRowsSQL("profile_results"), []string{"profile_results_row_id_key", "profile_results_pkey"}},
	"delete email results":    {deleteOfRowsSQL("email_results"), []string{"email_results_row_id_key", "email_results_pkey"}},
	"delete phone results":    {deleteOfRowsSQL("phone_results"), []string{"phone_results_row_id_key", "phone_results_pkey"}},
	"delete no-match markers": {deleteOfRowsSQL("no_matches"), []string{"no_matches_row_id_stage_key", "no_matches_pkey"}},
	"delete cache keys":       {deleteCacheKeysSQL, []string{"lookup_cache_pkey"}},
	"delete claim keys":       {deleteClaimKeysSQL, []string{"lookup_claims_pkey"}},
	"rewrite ledger keys":     {rewriteLedgerKeysSQL, []string{"credit_ledger_pkey"}},
	"bulk lines of chunks":    {ledgerBulkOfChunksSQL, []string{"job_rows_pkey", "credit_ledger_job_chunk_bulk", "credit_ledger_pkey"}},
}

func numbered1(sql string) string { return numbered(map[string]string{"": sql})[""] }

// NamedRowsSQL and RowsOfFoundSQL are the erasure's finding statements
// with their named arguments (the explain harness runs them).
var NamedRowsSQL, RowsOfFoundSQL = namedRowsSQL, rowsOfFoundSQL

// ResultsFeedSQL reads a page of the results feed (tenant, after position,
// limit): the plan test reads its plans.
const ResultsFeedSQL = resultsFeedSQL

// ResultStatements are the statements that read a job's results, by what
// they do (arguments: job, after row id, state, then the page's limit or
// the keys' cap): the plan test reads their plans.
var ResultStatements = map[string]string{
	"results page":          listResultsSQL,
	"results download":      resultsSelect,
	"extra keys":            resultExtraKeysSQL,
	"extra keys of a state": resultExtraKeysOfStateSQL,
}

// ExplainFeedPage is EXPLAIN (ANALYZE, FORMAT JSON) of a page of the
// results feed, planned as ResultsFeed plans it.
func (s *Store) ExplainFeedPage(ctx context.Context, tenant string, since int64, limit int) ([]byte, error) {
	var plan []byte
	err := s.inPageTx(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+resultsFeedSQL, tenant, since, limit).Scan(&plan)
	})
	return plan, err
}
