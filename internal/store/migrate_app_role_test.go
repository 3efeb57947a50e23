package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// What the owner of the tables may do and the services' role may not: turn
// the audit log's trigger off, empty or change the log, change or drop a
// table, make one, read goose's version table. Each is refused with
// insufficient_privilege (42501), and nothing of the log is lost.
func refusedToTheAppRole(t *testing.T, app *store.Store) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := app.CreateAPIKey(ctx, "acme", "etl", []domain.Scope{domain.ScopeRead}); err != nil { // an audit line, as the app
		t.Fatal(err)
	}
	for _, q := range []string{
		`ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_change`,
		`ALTER TABLE audit_log DISABLE TRIGGER ALL`,
		`TRUNCATE audit_log`,
		`DELETE FROM audit_log`,
		`UPDATE audit_log SET tenant = 'x'`,
		`TRUNCATE job_rows`,
		`ALTER TABLE jobs ADD COLUMN x int`,
		`DROP TABLE lookup_cache`,
		`CREATE TABLE x (i int)`,
		`CREATE TRIGGER x BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION audit_log_append_only()`,
		`SELECT count(*) FROM goose_db_version`,
	} {
		err := app.Exec(ctx, q)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Errorf("as the app role, %s: %v; want insufficient_privilege", q, err)
		}
	}
	if lines, err := app.AuditLog(ctx, "acme", 0, 10); err != nil || len(lines) != 1 {
		t.Errorf("the audit log as the app reads it: %d lines, %v", len(lines), err)
	}
}

// Connected as the services' role (a test database from the template,
// granted as Migrate grants), the store works and the owner's powers are
// refused.
func TestAppRoleCannotChangeTheAuditLog(t *testing.T) {
	t.Parallel()
	app := storetest.OpenAsApp(t, storetest.NewDatabase(t))
	refusedToTheAppRole(t, app)
}

// With ENRICHQ_MIGRATE_DATABASE_URL naming the owner, Migrate applies the
// migrations as the owner of an empty database and grants DATABASE_URL's
// role its privileges: the services then work as that role, and no more.
func TestMigrateAsTheOwnerGrantsTheAppRole(t *testing.T) {
	t.Parallel()
	storetest.NewDatabase(t) // the server has the app role from here on
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "enrichq_test_" + hex.EncodeToString(b[:])
	admin := storetest.ServerURL(t, "postgres")
	if err := storetest.CreateDatabase(ctx, admin, name, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := storetest.DropDatabase(ctx, admin, name); err != nil {
			t.Error(err)
		}
	})
	owner := storetest.ServerURL(t, name)
	app, err := store.Open(ctx, storetest.AppURL(t, owner), store.Options{MigrateURL: owner})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if err := app.Migrate(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := app.EnsureTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	refusedToTheAppRole(t, app)
	// Again (a restart): the grants are given again, harmlessly.
	if err := app.Migrate(ctx, nil); err != nil {
		t.Fatal(err)
	}
}
