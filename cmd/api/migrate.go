package main

import (
	"context"
	"fmt"
	"io"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/store"
)

// migrateCommand applies pending migrations and exits: the one-off step
// before services that start with ENRICHQ_MIGRATE=false (the Helm chart's
// hook Job). Concurrent runs are safe: goose holds a Postgres lock.
func migrateCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) != 0 {
		return usageError{fmt.Errorf("usage: api migrate (applies pending migrations to DATABASE_URL, as ENRICHQ_MIGRATE_DATABASE_URL when set, and exits)")}
	}
	cfg, err := config.APIFromEnv(getenv)
	if err != nil {
		return err
	}
	log := cfg.Logger(stderr).With("cmd", "api migrate")
	// With ENRICHQ_MIGRATE_DATABASE_URL, the owner migrates and grants
	// DATABASE_URL's role the services' privileges (the chart's Job).
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: 2, MigrateURL: cfg.MigrateDatabaseURL})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx, log); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}
