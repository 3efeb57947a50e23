package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// databases maps each Store of New and Open to its database URL, so that the
// helpers below can reach its tables without the store exposing its pool.
var databases sync.Map

// connect opens a connection of its own to st's database, closed by the
// returned function.
func connect(tb testing.TB, st *store.Store) (*pgx.Conn, func()) {
	tb.Helper()
	url, ok := databases.Load(st)
	if !ok {
		tb.Fatal("storetest: a store not made by storetest.New or storetest.Open")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c, err := pgx.Connect(ctx, url.(string))
	if err != nil {
		cancel()
		tb.Fatalf("storetest: connect: %v", err)
	}
	return c, func() { c.Close(context.Background()); cancel() }
}

// JobsAndRows counts the jobs and the job rows in st's database, of every tenant.
func JobsAndRows(tb testing.TB, st *store.Store) (jobs, rows int) {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	if err := c.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM job_rows)`).
		Scan(&jobs, &rows); err != nil {
		tb.Fatalf("storetest: count jobs and rows: %v", err)
	}
	return jobs, rows
}

// StartJobAt marks a job running since at, as if its first row had been
// claimed then.
func StartJobAt(tb testing.TB, st *store.Store, jobID string, at time.Time) {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	tag, err := c.Exec(context.Background(), `UPDATE jobs SET state = 'running', started_at = $2 WHERE id = $1`, jobID, at)
	if err != nil || tag.RowsAffected() != 1 {
		tb.Fatalf("storetest: start job %s: %d updated, %v", jobID, tag.RowsAffected(), err)
	}
}

// SealedMemberToken is a platform member's token as the database holds it.
func SealedMemberToken(tb testing.TB, st *store.Store, memberID string) []byte {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var sealed []byte
	if err := c.QueryRow(context.Background(), `SELECT token FROM platform_members WHERE id = $1`, memberID).Scan(&sealed); err != nil {
		tb.Fatalf("storetest: token of member %s: %v", memberID, err)
	}
	return sealed
}

// ConnectStates counts the platform connect states stored, used or not.
func ConnectStates(tb testing.TB, st *store.Store) int {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM platform_connect_states`).Scan(&n); err != nil {
		tb.Fatalf("storetest: count connect states: %v", err)
	}
	return n
}

// LapseReservations moves the expiry of every open reservation into the
// past, as if its TTL had run out, and returns how many it moved.
func LapseReservations(tb testing.TB, st *store.Store) int {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	tag, err := c.Exec(context.Background(), `UPDATE credit_ledger SET expires_at = now() - interval '1 second' WHERE status = 'reserved'`)
	if err != nil {
		tb.Fatalf("storetest: lapse reservations: %v", err)
	}
	return int(tag.RowsAffected())
}

// MatchedCacheForms counts the matched answers in the lookup cache, and
// those of them kept in the raw form ({"raw": ...}).
func MatchedCacheForms(tb testing.TB, st *store.Store) (raw, matched int) {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	if err := c.QueryRow(context.Background(),
		`SELECT count(*) FILTER (WHERE result ? 'raw'), count(*) FROM lookup_cache WHERE matched`).Scan(&raw, &matched); err != nil {
		tb.Fatalf("storetest: cache forms: %v", err)
	}
	return raw, matched
}

// SpoilCachedAnswer overwrites one matched cache entry of stage with a form
// no reader understands and returns its input key.
func SpoilCachedAnswer(tb testing.TB, st *store.Store, stage domain.Stage) (key string) {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	if err := c.QueryRow(context.Background(), `UPDATE lookup_cache SET result = '{"profile": 5}'
		WHERE (tenant, stage, input_key) = (SELECT tenant, stage, min(input_key) FROM lookup_cache WHERE stage = $1 AND matched GROUP BY 1, 2)
		RETURNING input_key`, stage).Scan(&key); err != nil {
		tb.Fatalf("storetest: spoil a cached %s answer: %v", stage, err)
	}
	return key
}

// ResultsDigest is a job's results, a line a row in input order: ref,
// state, profile name, headline and raw record, email, confidence and raw
// record, the stages found nothing, and whether the results came from the
// cache.
func ResultsDigest(tb testing.TB, st *store.Store, jobID string) string {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var s string
	if err := c.QueryRow(context.Background(), `SELECT string_agg(concat_ws(' | ', r.ref, r.state, p.name, p.headline, p.raw::text,
			e.email, e.confidence::text, e.raw::text, (SELECT string_agg(stage, ',') FROM no_matches n WHERE n.row_id = r.id),
			coalesce(p.from_cache, e.from_cache)::text), E'\n' ORDER BY r.input_row)
		FROM job_rows r LEFT JOIN profile_results p ON p.row_id = r.id LEFT JOIN email_results e ON e.row_id = r.id
		WHERE r.job_id = $1`, jobID).Scan(&s); err != nil {
		tb.Fatalf("storetest: results of job %s: %v", jobID, err)
	}
	return s
}

// ProfileSources counts a job's profiles served from the cache and those
// bought from the vendor.
func ProfileSources(tb testing.TB, st *store.Store, jobID string) (fromCache, bought int) {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	if err := c.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE p.from_cache), count(*) FILTER (WHERE NOT p.from_cache)
		FROM job_rows r JOIN profile_results p ON p.row_id = r.id WHERE r.job_id = $1`, jobID).Scan(&fromCache, &bought); err != nil {
		tb.Fatalf("storetest: profile sources of job %s: %v", jobID, err)
	}
	return fromCache, bought
}

// UnknownCalls counts a job's vendor calls of unknown outcome in the ledger.
func UnknownCalls(tb testing.TB, st *store.Store, jobID string) int {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var n int
	if err := c.QueryRow(context.Background(),
		`SELECT count(*) FROM credit_ledger WHERE job_id = $1 AND status = 'unknown'`, jobID).Scan(&n); err != nil {
		tb.Fatalf("storetest: unknown calls of job %s: %v", jobID, err)
	}
	return n
}

// IdleTransactions counts the sessions of st's database, other than this
// helper's, that hold a transaction open while they wait on their client
// (pg_stat_activity's "idle in transaction"): a transaction held across a
// call to elsewhere shows here.
func IdleTransactions(tb testing.TB, st *store.Store) int {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'`).Scan(&n); err != nil {
		tb.Fatalf("storetest: idle transactions: %v", err)
	}
	return n
}

// JobRowBytes is what a job's input takes on disk in st's database, of
// every job: job_rows and job_input_extras with their indexes and TOAST
// (pg_total_relation_size).
func JobRowBytes(tb testing.TB, st *store.Store) int64 {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var n int64
	if err := c.QueryRow(context.Background(), `SELECT pg_total_relation_size('job_rows')
		+ coalesce(pg_total_relation_size(to_regclass('job_input_extras')), 0)`).Scan(&n); err != nil {
		tb.Fatalf("storetest: job row bytes: %v", err)
	}
	return n
}

// PersonalTraces counts what a tenant's database holds of its people, table
// by table: rows with an input, rows at all, input extras, results, no-match
// markers, feed lines (not deleted ones), and cache entries.
func PersonalTraces(tb testing.TB, st *store.Store, tenant string) map[string]int {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	out := map[string]int{}
	for name, q := range map[string]string{
		"job_rows": `SELECT count(*) FROM job_rows r JOIN jobs j ON j.id = r.job_id WHERE j.tenant = $1`,
		"job_rows with input": `SELECT count(*) FROM job_rows r JOIN jobs j ON j.id = r.job_id WHERE j.tenant = $1
			AND num_nonnulls(r.profile_url, r.name, r.company, r.domain, r.email, r.role, r.found_profile_url) > 0`,
		"job_input_extras": `SELECT count(*) FROM job_input_extras x JOIN jobs j ON j.id = x.job_id WHERE j.tenant = $1`,
		"profile_results":  `SELECT count(*) FROM profile_results x JOIN jobs j ON j.id = x.job_id WHERE j.tenant = $1`,
		"email_results":    `SELECT count(*) FROM email_results x JOIN jobs j ON j.id = x.job_id WHERE j.tenant = $1`,
		"phone_results":    `SELECT count(*) FROM phone_results x JOIN jobs j ON j.id = x.job_id WHERE j.tenant = $1`,
		"no_matches":       `SELECT count(*) FROM no_matches x JOIN jobs j ON j.id = x.job_id WHERE j.tenant = $1`,
		"results_feed_log": `SELECT count(*) FROM results_feed_log WHERE tenant = $1 AND kind <> 'deleted'`,
		"lookup_cache":     `SELECT count(*) FROM lookup_cache WHERE tenant = $1`,
	} {
		var n int
		if err := c.QueryRow(context.Background(), q, tenant).Scan(&n); err != nil {
			tb.Fatalf("storetest: count %s: %v", name, err)
		}
		out[name] = n
	}
	return out
}

// StoredRow is a job row as stored, its input included.
type StoredRow struct {
	Ref, State, Reason, LastError                                string
	ProfileURL, Name, Company, Domain, Email, Role, FoundProfile string
}

// StoredRows returns a job's rows as stored, in id order.
func StoredRows(tb testing.TB, st *store.Store, jobID string) []StoredRow {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	rows, err := c.Query(context.Background(), `SELECT ref, state, state_reason, last_error, coalesce(profile_url, ''), coalesce(name, ''),
		coalesce(company, ''), coalesce(domain, ''), coalesce(email, ''), coalesce(role, ''), coalesce(found_profile_url, '')
		FROM job_rows WHERE job_id = $1 ORDER BY id`, jobID)
	if err != nil {
		tb.Fatalf("storetest: rows: %v", err)
	}
	var out []StoredRow
	var r StoredRow
	if _, err := pgx.ForEachRow(rows, []any{&r.Ref, &r.State, &r.Reason, &r.LastError, &r.ProfileURL, &r.Name, &r.Company, &r.Domain,
		&r.Email, &r.Role, &r.FoundProfile}, func() error {
		out = append(out, r)
		return nil
	}); err != nil {
		tb.Fatalf("storetest: rows: %v", err)
	}
	return out
}

// AgeJob moves a job's times back by d, as if it had been made, changed and
// dispatched d earlier.
func AgeJob(tb testing.TB, st *store.Store, jobID string, d time.Duration) {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	ctx := context.Background()
	for _, q := range []string{
		`UPDATE jobs SET created_at = created_at - $2::interval, updated_at = updated_at - $2::interval,
			started_at = started_at - $2::interval, paused_at = paused_at - $2::interval WHERE id = $1`,
		`UPDATE job_chunks SET enqueued_at = enqueued_at - $2::interval WHERE job_id = $1`,
		`UPDATE job_rows SET created_at = created_at - $2::interval, updated_at = updated_at - $2::interval WHERE job_id = $1`,
	} {
		if _, err := c.Exec(ctx, q, jobID, d); err != nil {
			tb.Fatalf("storetest: age job: %v", err)
		}
	}
}

// FirstFinishedAfter is when the first row of the job to reach a terminal
// state after at did so (by the database's clock); ok false when none did.
// A fault's rig reads the time from the fault to rows finishing again with it.
func FirstFinishedAfter(tb testing.TB, st *store.Store, jobID string, at time.Time) (first time.Time, ok bool) {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var t *time.Time
	if err := c.QueryRow(context.Background(), `SELECT min(finished_at) FROM job_rows WHERE job_id = $1 AND finished_at > $2`, jobID, at).Scan(&t); err != nil {
		tb.Fatalf("storetest: first finished after: %v", err)
	}
	if t == nil {
		return time.Time{}, false
	}
	return *t, true
}
