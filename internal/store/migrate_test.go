package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
	"github.com/enrichq/enrichq/migrations"
)

// Every migration's Down undoes its Up: a database migrated to the latest
// version goes down to nothing and up again, and ends where it was.
func TestMigrationsDownAndUpAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db, p := migrationProvider(t)
	latest, err := p.GetDBVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sources := p.ListSources(); latest != sources[len(sources)-1].Version {
		t.Fatalf("template at version %d, the last migration is %d", latest, sources[len(sources)-1].Version)
	}
	before := schema(t, db)
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("down to 0: %v", err)
	}
	if v, err := p.GetDBVersion(ctx); err != nil || v != 0 {
		t.Fatalf("after down: version %d, %v", v, err)
	}
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'goose_db_version'`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("after down: %d tables left", tables)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if after := schema(t, db); after != before {
		t.Errorf("schema after down and up differs:\nbefore: %s\nafter:  %s", before, after)
	}
}

// schema describes the public schema's constraints, indexes and triggers.
// migrationProvider opens a fresh migrated database of its own and a goose
// provider of enrichq's migrations on it, to move it down and up; all are
// closed when the test ends.
func migrationProvider(t *testing.T) (*store.Store, *sql.DB, *goose.Provider) {
	t.Helper()
	st, err := store.Open(context.Background(), storetest.NewDatabase(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	db := stdlib.OpenDBFromPool(st.Pool())
	t.Cleanup(func() { db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	return st, db, p
}

func schema(t *testing.T, db *sql.DB) string {
	t.Helper()
	var s string
	err := db.QueryRow(`SELECT string_agg(x, E'\n' ORDER BY x) FROM (
		SELECT 'constraint ' || conrelid::regclass || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = 'public'::regnamespace
		UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
		UNION ALL SELECT 'trigger ' || tgrelid::regclass || ' ' || tgname FROM pg_trigger WHERE NOT tgisinternal
		UNION ALL SELECT 'unlogged ' || relname FROM pg_class WHERE relpersistence = 'u' AND relnamespace = 'public'::regnamespace
		UNION ALL SELECT 'options ' || relname || ' ' || array_to_string(reloptions, ',') FROM pg_class
			WHERE reloptions IS NOT NULL AND relnamespace = 'public'::regnamespace
	) d(x)`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Deleting a job deletes its rows, and deleting rows deletes their results
// and no-match markers (statement triggers, migration 00013), and nothing
// of another job.
func TestDeleteCascades(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	now := time.Now()
	save := func(job store.Job) {
		t.Helper()
		claim, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
		if err != nil || len(claim.Rows) != 10 {
			t.Fatalf("claim: %d rows, %v", len(claim.Rows), err)
		}
		outs := make([]store.Outcome, 0, len(claim.Rows))
		for i, r := range claim.Rows {
			o := store.Outcome{RowID: r.ID, Prov: store.Provenance{FetchedAt: now}, StagesDone: []domain.Stage{domain.StageProfile, domain.StageEmail, domain.StagePhone},
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
	count := func(table, jobID string) int {
		t.Helper()
		var n int
		q := `SELECT count(*) FROM ` + table + ` x JOIN job_rows r ON r.id = x.row_id WHERE r.job_id = $1`
		if table == "job_rows" {
			q = `SELECT count(*) FROM job_rows WHERE job_id = $1`
		}
		if err := st.Pool().QueryRow(ctx, q, jobID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	orphans := func(table string) int {
		t.Helper()
		var n int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table+` x WHERE NOT EXISTS (SELECT 1 FROM job_rows r WHERE r.id = x.row_id)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	gone, kept := createJob(t, st, store.NewJob{}, 10), createJob(t, st, store.NewJob{}, 10)
	save(gone)
	save(kept)
	want := map[string]int{"job_rows": 10, "profile_results": 5, "email_results": 5, "phone_results": 5, "no_matches": 5}
	for table, n := range want {
		if got := count(table, gone.ID); got != n {
			t.Fatalf("%s before the delete: %d, want %d", table, got, n)
		}
	}

	// One row of the job first: its results go, the others stay.
	if _, err := st.Pool().Exec(ctx, `DELETE FROM job_rows WHERE id = (SELECT min(id) FROM job_rows WHERE job_id = $1)`, gone.ID); err != nil {
		t.Fatal(err)
	}
	if got := count("profile_results", gone.ID) + count("no_matches", gone.ID); got != 9 {
		t.Fatalf("after deleting one row: %d profiles and no-matches, want 9", got)
	}
	if _, err := st.Pool().Exec(ctx, `DELETE FROM jobs WHERE id = $1`, gone.ID); err != nil {
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
