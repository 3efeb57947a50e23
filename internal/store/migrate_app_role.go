package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// AppRoleGrants are the statements that give role (the services' own,
// DATABASE_URL's) what enrichq's services need in schema (the tables'), and
// no more: reading and writing the rows of every table, but never
// TRUNCATE, REFERENCES or TRIGGER; the audit log read and appended to only
// (its trigger refuses the rest, and the role, owning no table, can neither
// disable the trigger nor change any table: that takes the owner, who
// migrates); nothing of goose's version table. Each statement may be run
// again.
func AppRoleGrants(schema, role string) []string {
	s, r := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{role}.Sanitize()
	return []string{
		`GRANT USAGE ON SCHEMA ` + s + ` TO ` + r,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ` + s + ` TO ` + r,
		`REVOKE TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA ` + s + ` FROM ` + r,
		`REVOKE UPDATE, DELETE ON ` + s + `.audit_log FROM ` + r,
		`REVOKE ALL ON ` + s + `.goose_db_version FROM ` + r,
		`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ` + s + ` TO ` + r,
		`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ` + s + ` TO ` + r,
	}
}

// grantAppRole runs AppRoleGrants for role in the schema of the migrations,
// in one transaction, on the owner's pool.
func grantAppRole(ctx context.Context, pool *pgxpool.Pool, role string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("store: grant %s: %w", role, interpretError(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	// One grant at a time: replicas starting together would otherwise
	// update the same catalog rows at once ("tuple concurrently updated").
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(72217002)`); err != nil {
		return fmt.Errorf("store: grant %s: %w", role, interpretError(err))
	}
	var schema string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("store: grant %s: %w", role, interpretError(err))
	}
	for _, q := range AppRoleGrants(schema, role) {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("store: grant %s (%s): %w", role, q, interpretError(err))
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("store: grant %s: %w", role, interpretError(err))
	}
	return nil
}

// GrantAppRole gives role the services' privileges (AppRoleGrants) in the
// database of ownerURL, connected as the owner of its tables: for a setup
// that migrates apart from the services, and for tests.
func GrantAppRole(ctx context.Context, ownerURL, role string) error {
	cfg, err := pgxpool.ParseConfig(ownerURL)
	if err != nil {
		return fmt.Errorf("store: parse database URL: %w", err)
	}
	cfg.MaxConns, cfg.MinConns = 1, 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("store: connect: %w", err)
	}
	defer pool.Close()
	return grantAppRole(ctx, pool, role)
}
