package store

import (
	"context"
	"log/slog"
)

// Replication is how the Postgres server says it keeps a commit: locally
// only, or on a synchronous standby as well.
type Replication struct {
	SynchronousCommit       string // synchronous_commit: on, remote_apply, remote_write, local or off
	SynchronousStandbyNames string // synchronous_standby_names; empty: no standby is waited for
}

// Synchronous reports whether a commit is acknowledged only once a standby
// has it: the money tables survive a failover to that standby (a commit the
// vendor was paid for is never lost with the old primary).
func (r Replication) Synchronous() bool {
	switch r.SynchronousCommit {
	case "off", "local":
		return false
	}
	return r.SynchronousStandbyNames != ""
}

// Replication reads the server's replication settings as this store's
// sessions see them.
func (s *Store) Replication(ctx context.Context) (Replication, error) {
	var r Replication
	err := s.pool.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('synchronous_standby_names')`).
		Scan(&r.SynchronousCommit, &r.SynchronousStandbyNames)
	return r, interpretError(err)
}

// CheckReplication reads the replication settings and logs a warning, once,
// when commits are not kept on a synchronous standby. It reports whether
// they are (false, too, when they cannot be read).
func (s *Store) CheckReplication(ctx context.Context, log *slog.Logger) bool {
	r, err := s.Replication(ctx)
	switch {
	case err != nil:
		log.Warn("postgres replication settings not read", "err", err)
		return false
	case !r.Synchronous():
		log.Warn("postgres commits are not kept on a synchronous standby: a failover can lose ledger lines the vendor billed; "+
			"see docs/operations.md, Postgres failover",
			"synchronous_commit", r.SynchronousCommit, "synchronous_standby_names", r.SynchronousStandbyNames)
		return false
	}
	return true
}
