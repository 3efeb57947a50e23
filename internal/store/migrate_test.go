package store_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

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
	db := stdlib.OpenDBFromPool(store.PoolForTest(st))
	t.Cleanup(func() { db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	return st, db, p
}

// schema describes the public schema's constraints, indexes, triggers and
// table options.
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
