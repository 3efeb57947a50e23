package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// `api migrate` brings an empty database to the current schema and exits;
// a second run finds nothing to do.
func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := "enrichq_migrate_" + randomSuffix(t)
	admin := storetest.ServerURL(t, "postgres")
	if err := storetest.CreateDatabase(ctx, admin, name, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = storetest.DropDatabase(context.WithoutCancel(ctx), admin, name) })
	env := map[string]string{"DATABASE_URL": storetest.ServerURL(t, name)}
	for range 2 {
		var out bytes.Buffer
		if err := run(ctx, []string{"api", "migrate"}, func(k string) string { return env[k] }, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		if out.String() != "migrations applied\n" {
			t.Fatalf("stdout %q", out.String())
		}
	}
	st := storetest.Open(t, env["DATABASE_URL"])
	if _, err := st.CountLiveAPIKeys(ctx); err != nil {
		t.Fatalf("the schema is not there: %v", err)
	}
	if err := run(ctx, []string{"api", "migrate", "now"}, func(k string) string { return env[k] }, io.Discard, io.Discard); err == nil {
		t.Fatal("an argument too many: no error")
	}
}

func randomSuffix(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// `api migrate` with ENRICHQ_MIGRATE_DATABASE_URL migrates as that role
// (the owner, as the chart's Job does) and grants DATABASE_URL's role the
// services' privileges: the schema belongs to the owner, and the services'
// role can use it but not change it.
func TestMigrateCommandAsTheOwner(t *testing.T) {
	t.Parallel()
	storetest.NewDatabase(t) // the server has the app role from here on
	ctx := context.Background()
	name := "enrichq_migrate_" + randomSuffix(t)
	admin := storetest.ServerURL(t, "postgres")
	if err := storetest.CreateDatabase(ctx, admin, name, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = storetest.DropDatabase(context.WithoutCancel(ctx), admin, name) })
	owner := storetest.ServerURL(t, name)
	env := map[string]string{"DATABASE_URL": storetest.AppURL(t, owner), "ENRICHQ_MIGRATE_DATABASE_URL": owner}
	if err := run(ctx, []string{"api", "migrate"}, func(k string) string { return env[k] }, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	app := storetest.Open(t, env["DATABASE_URL"])
	if _, err := app.EnsureTenant(ctx, "acme"); err != nil {
		t.Fatalf("the services' role cannot use the schema: %v", err)
	}
	conn, err := pgx.Connect(ctx, env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `ALTER TABLE jobs ADD COLUMN x int`); err == nil {
		t.Fatal("the services' role owns the tables: the migration ran as DATABASE_URL")
	}
}
