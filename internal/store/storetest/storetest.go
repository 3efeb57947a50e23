// Package storetest gives each test its own real Postgres database, cloned
// from a migrated template, so tests run in parallel and leave nothing behind.
//
// The server is the one named by ENRICHQ_TEST_DATABASE_URL, else
// DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres.
//
// It also holds what only tests and rigs do to a server (database.go:
// create, drop, checkpoint, a standby's state), which the services never do.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	neturl "net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/migrations"
)

// ServerURL returns the URL of the Postgres server tests use, pointing at database db.
func ServerURL(tb testing.TB, db string) string {
	tb.Helper()
	raw := os.Getenv("ENRICHQ_TEST_DATABASE_URL")
	if raw == "" {
		raw = os.Getenv("DATABASE_URL")
	}
	if raw == "" {
		raw = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	u, err := neturl.Parse(raw)
	if err != nil {
		tb.Fatalf("storetest: parse database URL: %v", err)
	}
	u.Path = "/" + db
	return u.String()
}

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// AppRole is the role tests connect as to be the services' role of a
// production setup (docs/operations.md, "Database roles"): it owns nothing
// and has the privileges store.AppRoleGrants gives. It is made once per
// server, with a password of its own name, so that it logs in under trust
// and password authentication alike.
const AppRole = "enrichq_app_test"

// migrationsHash names the template after the migrations and the app
// role's grants, so a changed schema gets a fresh template.
func migrationsHash() (string, error) {
	h := sha256.New()
	for _, q := range store.AppRoleGrants("schema", AppRole) {
		fmt.Fprintf(h, "%s\x00", q)
	}
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%s\x00", path, b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12], err
}

// ensureTemplate creates the migrated template database once per server,
// under an advisory lock so parallel test binaries do it once.
func ensureTemplate(tb testing.TB) (string, error) {
	templateOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		hash, err := migrationsHash()
		if err != nil {
			templateErr = err
			return
		}
		name := "enrichq_tpl_" + hash
		admin, err := pgx.Connect(ctx, ServerURL(tb, "postgres"))
		if err != nil {
			templateErr = fmt.Errorf("storetest: connect to Postgres (is it running? see README: make services): %w", err)
			return
		}
		defer admin.Close(context.Background())
		if _, err := admin.Exec(ctx, `SELECT pg_advisory_lock(72217001)`); err != nil {
			templateErr = err
			return
		}
		defer admin.Exec(context.Background(), `SELECT pg_advisory_unlock(72217001)`) //nolint:errcheck
		// Roles are the server's: made once, by whichever test binary comes first.
		if _, err := admin.Exec(ctx, `DO $$ BEGIN
				IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '`+AppRole+`') THEN
					CREATE ROLE `+AppRole+` LOGIN PASSWORD '`+AppRole+`';
				END IF;
			END $$`); err != nil {
			templateErr = fmt.Errorf("storetest: create role %s: %w", AppRole, err)
			return
		}
		var exists bool
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)`, name).Scan(&exists); err != nil {
			templateErr = err
			return
		}
		if !exists {
			if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
				templateErr = err
				return
			}
			if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
				templateErr = err
				return
			}
			st, err := store.Open(ctx, ServerURL(tb, name), store.Options{})
			if err != nil {
				templateErr = err
				return
			}
			err = st.Migrate(ctx, nil)
			st.Close()
			if err == nil {
				err = store.GrantAppRole(ctx, ServerURL(tb, name), AppRole) // copied with the template
			}
			if err != nil {
				templateErr = err
				return
			}
			if _, err := admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{name}.Sanitize()+` WITH is_template true ALLOW_CONNECTIONS false`); err != nil {
				templateErr = err
				return
			}
		}
		templateName = name
	})
	return templateName, templateErr
}

// NewDatabase creates a fresh, migrated database for this test and returns
// its URL. It is dropped when the test ends.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	tpl, err := ensureTemplate(tb)
	if err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "enrichq_test_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, ServerURL(tb, "postgres"))
	if err != nil {
		tb.Fatalf("storetest: connect: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()+` TEMPLATE `+pgx.Identifier{tpl}.Sanitize()+` STRATEGY FILE_COPY`); err != nil {
		tb.Fatalf("storetest: create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, ServerURL(tb, "postgres"))
		if err != nil {
			tb.Errorf("storetest: drop %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
			tb.Errorf("storetest: drop %s: %v", name, err)
		}
	})
	return ServerURL(tb, name)
}

// New returns a Store on a fresh database, closed when the test ends.
func New(tb testing.TB) *store.Store {
	tb.Helper()
	return Open(tb, NewDatabase(tb))
}

// Open returns a Store on the database at url (one of NewDatabase's), closed
// when the test ends. The helpers of this package that read or write behind
// the store's back work on the stores of New and Open.
func Open(tb testing.TB, url string) *store.Store {
	tb.Helper()
	return OpenWith(tb, url, store.Options{})
}

// OpenWith is Open with options (a small pool, session timeouts).
func OpenWith(tb testing.TB, url string, opts store.Options) *store.Store {
	tb.Helper()
	st, err := store.Open(context.Background(), url, opts)
	if err != nil {
		tb.Fatalf("storetest: open: %v", err)
	}
	tb.Cleanup(st.Close)
	databases.Store(st, url)
	tb.Cleanup(func() { databases.Delete(st) })
	return st
}

// AppURL is url (one of NewDatabase's) for AppRole: connected so, a test
// has the privileges of the services' role, not the owner's.
func AppURL(tb testing.TB, url string) string {
	tb.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		tb.Fatalf("storetest: parse database URL: %v", err)
	}
	u.User = neturl.UserPassword(AppRole, AppRole)
	return u.String()
}

// OpenAsApp returns a Store on the database at url (one of NewDatabase's)
// connected as AppRole, closed when the test ends; the helpers of this
// package reach its tables as the owner.
func OpenAsApp(tb testing.TB, url string) *store.Store {
	tb.Helper()
	st, err := store.Open(context.Background(), AppURL(tb, url), store.Options{})
	if err != nil {
		tb.Fatalf("storetest: open: %v", err)
	}
	tb.Cleanup(st.Close)
	databases.Store(st, url)
	tb.Cleanup(func() { databases.Delete(st) })
	return st
}

// Unreachable returns a Store whose database cannot be reached (nothing
// listens at its address), closed when the test ends: Postgres down.
func Unreachable(tb testing.TB) *store.Store {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	st, err := store.Open(context.Background(), "postgres://enrichq@"+addr+"/enrichq?connect_timeout=5", store.Options{})
	if err != nil {
		tb.Fatalf("storetest: open: %v", err)
	}
	tb.Cleanup(st.Close)
	return st
}
