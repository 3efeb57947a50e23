// Databases made and dropped by name on a server, for the tests, the bench and
// the chaos rig; the services never create or drop a database.

package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// CreateDatabase creates an empty database on the server of adminURL (a URL
// of a database there, such as postgres). With a locale, the database is made
// from template0 in that locale; else from the server's default template.
// Dev tools run against a database of their own with it.
func CreateDatabase(ctx context.Context, adminURL, name, locale string) error {
	return onServer(ctx, adminURL, "create database "+name, func(c *pgx.Conn) error {
		create := `CREATE DATABASE ` + pgx.Identifier{name}.Sanitize()
		if locale != "" {
			// A literal: CREATE DATABASE takes no parameters.
			create += ` TEMPLATE template0 LOCALE '` + strings.ReplaceAll(locale, "'", "''") + `'`
		}
		_, err := c.Exec(ctx, create)
		return err
	})
}

// DropDatabase drops a database of the server of adminURL, if it exists,
// closing its connections first.
func DropDatabase(ctx context.Context, adminURL, name string) error {
	return onServer(ctx, adminURL, "drop database "+name, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
		return err
	})
}

// Checkpoint writes the server's dirty pages out now (it needs superuser or
// pg_checkpoint), so that a measurement does not pay for an earlier one's writes.
func Checkpoint(ctx context.Context, adminURL string) error {
	return onServer(ctx, adminURL, "checkpoint", func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `CHECKPOINT`)
		return err
	})
}

// onServer runs fn on a connection of its own to adminURL.
func onServer(ctx context.Context, adminURL, what string, fn func(*pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("store: %s: connect: %w", what, err)
	}
	defer c.Close(context.Background())
	if err := fn(c); err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	return nil
}

// StandbyState is how the server of adminURL streams to the standby whose
// application_name is name: "sync", "async", "potential", "quorum", or ""
// when it is not connected. The failover rig waits for "sync" with it.
func StandbyState(ctx context.Context, adminURL, name string) (string, error) {
	var state string
	err := onServer(ctx, adminURL, "standby state", func(c *pgx.Conn) error {
		err := c.QueryRow(ctx, `SELECT sync_state FROM pg_stat_replication WHERE application_name = $1`, name).Scan(&state)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	return state, err
}

// CanChangeSchema reports whether the role of url may change enrichq's
// tables (it tries, in a transaction rolled back): the services' role must not.
func CanChangeSchema(ctx context.Context, url string) (bool, error) {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return false, err
	}
	defer c.Close(ctx)
	tx, err := c.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // only ever rolled back
	_, err = tx.Exec(ctx, `ALTER TABLE jobs ADD COLUMN schema_probe int`)
	return err == nil, nil
}
