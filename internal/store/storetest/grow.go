package storetest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/store"
)

// Grown is a finished job GrowJob made in SQL, with the values that name
// the people of its rows.
type Grown struct {
	ID, Tag string
	Rows    int
}

// URL, Email, Name and Company are row i's input values in job g (by i%4:
// 0 and 1 a profile URL, 2 a name and company, 3 an email); FoundURL the
// profile found for a row of another kind.
func (g Grown) URL(i int) string { return fmt.Sprintf("https://platform.example/in/%s-%d", g.Tag, i) }
func (g Grown) FoundURL(i int) string {
	return fmt.Sprintf("https://platform.example/in/f-%s-%d", g.Tag, i)
}
func (g Grown) Email(i int) string   { return fmt.Sprintf("%s.%d@example.com", g.Tag, i) }
func (g Grown) Name(i int) string    { return fmt.Sprintf("person %s %d", g.Tag, i) }
func (g Grown) Company(i int) string { return fmt.Sprintf("company %d", i%1000) }

// SharedEmails is how many emails GrowJob finds for the rows not named by
// an email, the same in every job: row i's is shared.(i % SharedEmails)@example.com.
const SharedEmails = 1000

// GrowJob adds to tenant a finished job of rows rows, as the pipeline would
// have left it, written with generate_series (a million rows in about a
// minute): each row's input, four in five matched with a profile result
// (one in two of those with an email result, one in ten a phone result), the others a no-match
// marker; a feed line per result and marker, a cache entry, a ledger line
// and an extra per row, all dated at. As a vendor does, it finds one email
// for many rows: a row not named by its email gets one of SharedEmails, so
// a person erased by the profile URL of such a row has rows in proportion
// to the tenant (an erasure's arrays hold hundreds of them). With analyze,
// the tables' statistics are taken afterwards; without, the job is as fresh
// as one the planner has not seen.
func GrowJob(tb testing.TB, st *store.Store, tenant string, rows int, at time.Time, analyze bool) Grown {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	ctx := context.Background()
	g := Grown{ID: uuid.NewString(), Rows: rows}
	g.Tag = g.ID[:8]
	name := `'person ' || $3 || ' ' || i`
	stmts := []string{
		`INSERT INTO tenants (id) VALUES ($4) ON CONFLICT DO NOTHING`,
		`INSERT INTO jobs (id, tenant, lookups, state, total_rows, chunk_count, created_at, started_at, finished_at, updated_at)
			VALUES ($1, $4, '{profile,email}', 'completed', $2, ($2 + 99) / 100, $5, $5, $5, $5)`,
		`INSERT INTO job_rows (job_id, chunk, input_row, ref, input_kind, profile_url, name, company, email, found_profile_url,
				state, stages_done, any_match, created_at, updated_at, finished_at)
			SELECT $1, i / 100, i + 2, i::text,
				(ARRAY['profile_url', 'profile_url', 'name_company', 'email'])[i % 4 + 1],
				CASE WHEN i % 4 < 2 THEN 'https://platform.example/in/' || $3 || '-' || i END,
				CASE WHEN i % 4 = 2 THEN ` + name + ` END,
				CASE WHEN i % 4 = 2 THEN 'company ' || i % 1000 END,
				CASE WHEN i % 4 = 3 THEN $3 || '.' || i || '@example.com' END,
				CASE WHEN i % 4 < 2 THEN 'https://platform.example/in/' || $3 || '-' || i
					WHEN i % 5 <> 0 THEN 'https://platform.example/in/f-' || $3 || '-' || i END,
				CASE WHEN i % 5 = 0 THEN 'no_match' ELSE 'matched' END, '{profile,email}', i % 5 <> 0, $5, $5, $5
			FROM generate_series(0, $2 - 1) i`,
		`WITH p AS (
			INSERT INTO profile_results (job_id, row_id, profile_url, name, company, raw, fetched_at, created_at)
			SELECT $1, r.id, r.found_profile_url, coalesce(r.name, 'person ' || $3 || ' ' || (r.input_row - 2)),
				'company ' || (r.input_row - 2) % 1000, '{}', $5, $5
			FROM job_rows r WHERE r.job_id = $1 AND r.state = 'matched'
			RETURNING seq, row_id)
		INSERT INTO results_feed_log (tenant, job_id, row_id, kind, stage, source_seq, logged_at)
		SELECT $4, $1, row_id, 'profile', 'profile', seq, $5 FROM p`,
		`WITH e AS (
			INSERT INTO email_results (job_id, row_id, profile_url, email, raw, fetched_at, created_at)
			SELECT $1, r.id, r.found_profile_url, coalesce(r.email, 'shared.' || (r.input_row - 2) % ` + strconv.Itoa(SharedEmails) + ` || '@example.com'), '{}', $5, $5
			FROM job_rows r WHERE r.job_id = $1 AND r.state = 'matched' AND r.input_row % 2 = 0
			RETURNING seq, row_id)
		INSERT INTO results_feed_log (tenant, job_id, row_id, kind, stage, source_seq, logged_at)
		SELECT $4, $1, row_id, 'email', 'email', seq, $5 FROM e`,
		`WITH ph AS (
			INSERT INTO phone_results (job_id, row_id, profile_url, phones, raw, fetched_at, created_at)
			SELECT $1, r.id, r.found_profile_url, '[]', '{}', $5, $5
			FROM job_rows r WHERE r.job_id = $1 AND r.state = 'matched' AND r.input_row % 10 = 0
			RETURNING seq, row_id)
		INSERT INTO results_feed_log (tenant, job_id, row_id, kind, stage, source_seq, logged_at)
		SELECT $4, $1, row_id, 'phone', 'phone', seq, $5 FROM ph`,
		`INSERT INTO job_chunks (job_id, chunk, enqueued_at) SELECT $1, c, $5 FROM generate_series(0, ($2 + 99) / 100 - 1) c`,
		`WITH n AS (
			INSERT INTO no_matches (job_id, row_id, stage, checked_at, created_at)
			SELECT $1, r.id, 'profile', $5, $5 FROM job_rows r WHERE r.job_id = $1 AND r.state = 'no_match'
			RETURNING seq, row_id)
		INSERT INTO results_feed_log (tenant, job_id, row_id, kind, stage, source_seq, logged_at)
		SELECT $4, $1, row_id, 'no_match', 'profile', seq, $5 FROM n`,
		`INSERT INTO lookup_cache (tenant, stage, input_key, matched, fetched_at)
			SELECT $4, 'profile', 'k:' || $3 || ':' || i, i % 5 <> 0, $5 FROM generate_series(0, $2 - 1) i`,
		// Charged 0: the tenant's usage trigger, run per line, leaves the tenant's row alone.
		`INSERT INTO credit_ledger (job_id, row_id, stage, endpoint, idempotency_key, reserved, charged, status, reserved_at, expires_at, settled_at)
			SELECT $1, r.id, 'profile', '/v1/profile', 'key-' || r.id, 1, 0, 'settled', $5, $5, $5
			FROM job_rows r WHERE r.job_id = $1`,
		`INSERT INTO job_input_extras (job_id, input_row, extra)
			SELECT $1, i + 2, jsonb_build_object('crm_id', i::text) FROM generate_series(0, $2 - 1) i`,
		// The feed's lines are written above: its advance starts after them.
		`UPDATE results_feed_cursor SET horizon = pg_snapshot_xmin(pg_current_snapshot()), seen = pg_current_snapshot()`,
	}
	for _, q := range stmts {
		q = strings.NewReplacer("$1", "@job::uuid", "$2", "@rows::int", "$3", "@tag::text", "$4", "@tenant::text", "$5", "@at::timestamptz").Replace(q)
		if _, err := c.Exec(ctx, q, pgx.NamedArgs{"job": g.ID, "rows": rows, "tag": g.Tag, "tenant": tenant, "at": at}); err != nil {
			tb.Fatalf("storetest: grow job: %v\n%s", err, q)
		}
	}
	if analyze {
		if _, err := c.Exec(ctx, `ANALYZE`); err != nil {
			tb.Fatalf("storetest: analyze: %v", err)
		}
	}
	return g
}
