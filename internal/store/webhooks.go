package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// WebhookDelivery is one completion callback to send.
type WebhookDelivery struct {
	ID       int64
	JobID    string
	Event    string
	URL      string
	Attempts int // including the one being made
}

// ClaimWebhookDeliveries takes up to limit deliveries that are due, counting
// an attempt and pushing their due time by lease (so a lost sender's
// delivery comes back). Concurrent schedulers get disjoint sets.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, limit int, lease time.Duration) ([]WebhookDelivery, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_attempt_at = now() + $2 * interval '1 millisecond'
		FROM (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= now()
		      ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED) x
		WHERE d.id = x.id
		RETURNING d.id, d.job_id::text, d.event, d.url, d.attempts`, limit, lease.Milliseconds())
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[WebhookDelivery])
	return out, interpretError(err)
}

// WebhookAttempt is the outcome of one delivery attempt.
type WebhookAttempt struct {
	Delivered bool
	Status    *int      // the receiver's HTTP status; nil when it did not answer
	Error     string    // why it was not delivered
	GiveUp    bool      // the last attempt: the delivery is failed for good
	RetryAt   time.Time // when not delivered and not given up
}

// RecordWebhookAttempt records an attempt's outcome.
func (s *Store) RecordWebhookAttempt(ctx context.Context, id int64, a WebhookAttempt) error {
	state := "pending"
	switch {
	case a.Delivered:
		state = "delivered"
	case a.GiveUp:
		state = "failed"
	}
	var next any
	if state == "pending" {
		next = a.RetryAt
	}
	_, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET state = $2, last_status = $3, last_error = $4,
		next_attempt_at = coalesce($5, next_attempt_at), delivered_at = CASE WHEN $2 = 'delivered' THEN now() END
		WHERE id = $1`, id, state, a.Status, a.Error, next)
	return interpretError(err)
}

// WebhookStatus is a delivery's record, for tests and operators.
type WebhookStatus struct {
	State      string
	Attempts   int
	LastStatus *int
	LastError  string
}

// JobWebhook returns the record of a job's completion delivery.
func (s *Store) JobWebhook(ctx context.Context, jobID string) (WebhookStatus, error) {
	var w WebhookStatus
	err := s.pool.QueryRow(ctx, `SELECT state, attempts, last_status, last_error FROM webhook_deliveries WHERE job_id = $1`, jobID).
		Scan(&w.State, &w.Attempts, &w.LastStatus, &w.LastError)
	return w, interpretError(err)
}
