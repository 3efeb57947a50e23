package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Actions of the audit log.
const (
	AuditResultsDownload = "results_download" // a page or a download of a job's results
	AuditFeedRead        = "feed_read"        // a page of the results feed
	AuditErasure         = "erasure"          // POST /v1/erasures
	AuditErasureLifted   = "erasure_lifted"   // DELETE /v1/erasures/{id}
	AuditRetentionPurge  = "retention_purge"  // the scheduler removed a job's rows past the retention window
	AuditRetention       = "retention_changed"
	AuditKeyCreated      = "key_created"
	AuditKeyRevoked      = "key_revoked"
	AuditBudget          = "budget_changed" // a job's budget
	AuditLimits          = "limits_changed" // the tenant's default budget or allowance
	AuditWatchCreated    = "watch_created"
	AuditWatchChanged    = "watch_changed" // paused, resumed, its period or cap
	AuditWatchDeleted    = "watch_deleted"
	AuditWatchRun        = "watch_run"          // a run asked for now
	AuditWatchChanges    = "watch_changes_read" // a page of a watch's change lines
)

// Who acts when no API key does.
const (
	ActorOperator  = "operator"  // the api's own commands (api keys create, revoke)
	ActorScheduler = "scheduler" // retention
	ActorWorker    = "worker"    // a vendor's word about a person (AuditVendorSuppressed)
)

// AuditLine is one line of the append-only audit log: when, which tenant,
// which key, what, about what (an id, never a person), how many rows.
type AuditLine struct {
	Seq     int64     `json:"seq"`
	At      time.Time `json:"at"`
	Tenant  string    `json:"tenant"`
	KeyID   string    `json:"key_id"`
	Action  string    `json:"action"`
	Subject string    `json:"subject"`
	Rows    int64     `json:"rows"`
}

// Audit appends a line to the audit log.
func (s *Store) Audit(ctx context.Context, l AuditLine) error {
	if err := needTenant(l.Tenant); err != nil {
		return err
	}
	if l.Action == "" {
		return errors.New("store: an audit line needs an action")
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO audit_log (tenant, key_id, action, subject, rows) VALUES ($1, $2, $3, $4, $5)`,
		l.Tenant, l.KeyID, l.Action, l.Subject, l.Rows)
	return interpretError(err)
}

func appendAudit(ctx context.Context, tx pgx.Tx, l AuditLine) error {
	_, err := tx.Exec(ctx, `INSERT INTO audit_log (tenant, key_id, action, subject, rows) VALUES ($1, $2, $3, $4, $5)`,
		l.Tenant, l.KeyID, l.Action, l.Subject, l.Rows)
	return interpretError(err)
}

// AuditLog returns up to limit lines of a tenant's audit log after seq
// since, oldest first.
func (s *Store) AuditLog(ctx context.Context, tenant string, since int64, limit int) ([]AuditLine, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, at, tenant, key_id, action, subject, rows FROM audit_log
		WHERE tenant = $1 AND seq > $2 ORDER BY seq LIMIT $3`, tenant, since, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	out := []AuditLine{}
	var l AuditLine
	_, err = pgx.ForEachRow(rows, []any{&l.Seq, &l.At, &l.Tenant, &l.KeyID, &l.Action, &l.Subject, &l.Rows}, func() error {
		l.At = l.At.UTC()
		out = append(out, l)
		return nil
	})
	return out, interpretError(err)
}
