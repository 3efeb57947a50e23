package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// saveTenRows claims chunk 0 of job (ten rows) and saves it: the even rows
// matched on every stage, the odd ones no profile.
func saveTenRows(t *testing.T, st *store.Store, job store.Job) {
	t.Helper()
	ctx := context.Background()
	claim, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(claim.Rows) != 10 {
		t.Fatalf("claim: %d rows, %v", len(claim.Rows), err)
	}
	now := time.Now()
	outs := make([]store.Outcome, 0, len(claim.Rows))
	for i, r := range claim.Rows {
		o := store.Outcome{RowID: r.ID, Prov: store.Provenance{FetchedAt: now}, StagesDone: domain.Stages,
			State: domain.RowMatched, AnyMatch: true, FoundProfileURL: fmt.Sprint("https://p.example/in/", r.ID)}
		if i%2 == 0 {
			o.Profile = &store.ProfileResult{ProfileURL: o.FoundProfileURL, Name: "Jane"}
			o.Email = &store.EmailResult{ProfileURL: o.FoundProfileURL, Email: "jane@example.com"}
			o.Phone = &store.PhoneResult{ProfileURL: o.FoundProfileURL, Phones: []byte(`[{"number":"+1"}]`)}
		} else {
			o.NoMatches, o.State, o.AnyMatch, o.FoundProfileURL = []domain.Stage{domain.StageProfile}, domain.RowNoMatch, false, ""
		}
		outs = append(outs, o)
	}
	if ids, err := st.SaveOutcomes(ctx, job.Tenant, claim.Token, outs, nil); err != nil || len(ids) != len(outs) {
		t.Fatalf("save: %d of %d, %v", len(ids), len(outs), err)
	}
}

// Deleting a job deletes its rows, and deleting rows deletes their results
// and no-match markers (foreign keys, ON DELETE CASCADE), and nothing of
// another job.
func TestDeleteCascades(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	count := func(table, jobID string) int {
		t.Helper()
		var n int
		q := `SELECT count(*) FROM ` + table + ` x JOIN job_rows r ON r.id = x.row_id WHERE r.job_id = $1`
		if table == "job_rows" {
			q = `SELECT count(*) FROM job_rows WHERE job_id = $1`
		}
		if err := store.PoolForTest(st).QueryRow(ctx, q, jobID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	orphans := func(table string) int {
		t.Helper()
		var n int
		if err := store.PoolForTest(st).QueryRow(ctx, `SELECT count(*) FROM `+table+` x WHERE NOT EXISTS (SELECT 1 FROM job_rows r WHERE r.id = x.row_id)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	gone, kept := createJob(t, st, store.NewJob{}, 10), createJob(t, st, store.NewJob{}, 10)
	saveTenRows(t, st, gone)
	saveTenRows(t, st, kept)
	want := map[string]int{"job_rows": 10, "profile_results": 5, "email_results": 5, "phone_results": 5, "no_matches": 5}
	for table, n := range want {
		if got := count(table, gone.ID); got != n {
			t.Fatalf("%s before the delete: %d, want %d", table, got, n)
		}
	}

	// One row of the job first: its results go, the others stay.
	if _, err := store.PoolForTest(st).Exec(ctx, `DELETE FROM job_rows WHERE id = (SELECT min(id) FROM job_rows WHERE job_id = $1)`, gone.ID); err != nil {
		t.Fatal(err)
	}
	if got := count("profile_results", gone.ID) + count("no_matches", gone.ID); got != 9 {
		t.Fatalf("after deleting one row: %d profiles and no-matches, want 9", got)
	}
	if _, err := store.PoolForTest(st).Exec(ctx, `DELETE FROM jobs WHERE id = $1`, gone.ID); err != nil {
		t.Fatal(err)
	}
	for table := range want {
		if table != "job_rows" {
			if n := orphans(table); n != 0 {
				t.Errorf("%s: %d rows left without their row", table, n)
			}
		}
		if got := count(table, gone.ID); got != 0 {
			t.Errorf("%s of the deleted job: %d left", table, got)
		}
		if got := count(table, kept.ID); got != want[table] {
			t.Errorf("%s of the other job: %d, want %d", table, got, want[table])
		}
	}
}

// TRUNCATE jobs CASCADE empties every table that hangs on jobs, through its
// rows too (results and no-match markers reference job_rows), and the
// results feed then shows nothing.
func TestTruncateJobsCascades(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{CallbackURL: "https://hooks.example/done"}, 10)
	id, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, RowCount: 1, Stage: "profile", Endpoint: "/v1/profile",
		IdempotencyKey: "k1", Credits: 1, TTL: time.Minute})
	if err != nil {
		t.Fatalf("reserve: %v", err)
	}
	// Sent, its answer lost: it stays open, and does not hold the job back
	// (a never-sent one would, until released).
	if ok, err := st.MarkSent(ctx, id); err != nil || !ok {
		t.Fatalf("mark sent: %v %v", ok, err)
	}
	saveTenRows(t, st, job)
	if finished, err := st.FinishJobs(ctx, job.ID); err != nil || len(finished) != 1 {
		t.Fatalf("finish: %d jobs, %v", len(finished), err)
	}
	if _, err := st.AdvanceResultsFeed(ctx); err != nil {
		t.Fatal(err)
	}
	rows := func(relation string) int {
		t.Helper()
		var n int
		if err := store.PoolForTest(st).QueryRow(ctx, `SELECT count(*) FROM `+relation).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	filled := []string{"job_rows", "job_chunks", "job_chunk_counts", "profile_results", "email_results", "phone_results",
		"no_matches", "credit_ledger", "webhook_deliveries", "results_feed"}
	for _, rel := range filled {
		if rows(rel) == 0 {
			t.Fatalf("%s is empty before the truncate: the test fills nothing to check", rel)
		}
	}

	// Every table with a chain of foreign keys to jobs.
	tr, err := store.PoolForTest(st).Query(ctx, `WITH RECURSIVE hangs(rel) AS (
			SELECT 'jobs'::regclass
			UNION SELECT c.conrelid::regclass FROM pg_constraint c JOIN hangs h ON c.confrelid = h.rel WHERE c.contype = 'f')
		SELECT rel::text FROM hangs WHERE rel <> 'jobs'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	dependent := map[string]bool{}
	for tr.Next() {
		var rel string
		if err := tr.Scan(&rel); err != nil {
			t.Fatal(err)
		}
		dependent[rel] = true
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"job_rows", "job_chunks", "job_chunk_counts", "profile_results", "email_results", "phone_results",
		"no_matches", "credit_ledger", "webhook_deliveries", "platform_sync_chunks"} {
		if !dependent[rel] {
			t.Errorf("%s has no chain of foreign keys to jobs: TRUNCATE jobs CASCADE leaves it", rel)
		}
	}

	if _, err := store.PoolForTest(st).Exec(ctx, `TRUNCATE jobs CASCADE`); err != nil {
		t.Fatal(err)
	}
	for rel := range dependent {
		if n := rows(rel); n != 0 {
			t.Errorf("%s after TRUNCATE jobs CASCADE: %d rows", rel, n)
		}
	}
	if n := rows("results_feed"); n != 0 {
		t.Errorf("results_feed after TRUNCATE jobs CASCADE: %d lines", n)
	}
}

// A result or marker names its row and that row's job (migrations/00001_schema.sql,
// "Results and markers"): one
// that names its row with another job's id is refused.
func TestResultsNameTheirRowsJob(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	a, b := createJob(t, st, store.NewJob{}, 10), createJob(t, st, store.NewJob{}, 10)
	var rowOfA int64
	if err := store.PoolForTest(st).QueryRow(ctx, `SELECT min(id) FROM job_rows WHERE job_id = $1`, a.ID).Scan(&rowOfA); err != nil {
		t.Fatal(err)
	}
	for table, insert := range map[string]string{
		"profile_results": `INSERT INTO profile_results (job_id, row_id, profile_url, raw, fetched_at) VALUES ($1, $2, 'https://p.example/in/x', '{}', now())`,
		"email_results":   `INSERT INTO email_results (job_id, row_id, profile_url, email, raw, fetched_at) VALUES ($1, $2, 'https://p.example/in/x', 'x@example.com', '{}', now())`,
		"phone_results":   `INSERT INTO phone_results (job_id, row_id, profile_url, phones, raw, fetched_at) VALUES ($1, $2, 'https://p.example/in/x', '[]', '{}', now())`,
		"no_matches":      `INSERT INTO no_matches (job_id, row_id, stage, checked_at) VALUES ($1, $2, 'profile', now())`,
	} {
		_, err := store.PoolForTest(st).Exec(ctx, insert, b.ID, rowOfA)
		if err == nil || !strings.Contains(err.Error(), "foreign key") {
			t.Errorf("%s naming a row of job A with job B's id: %v, want a foreign key violation", table, err)
		}
		if _, err := store.PoolForTest(st).Exec(ctx, insert, a.ID, rowOfA); err != nil {
			t.Errorf("%s naming its row and the row's job: %v", table, err)
		}
	}
}
