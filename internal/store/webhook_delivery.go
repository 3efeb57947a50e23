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
	Attempts int    // including the one being made
	Tenant   string // the job's
	// Secret is the tenant's webhook secret, which signs the delivery. Never logged.
	Secret string
}

// ClaimWebhookDeliveries takes up to limit deliveries that are due, counting
// an attempt and pushing their due time by lease (so a lost sender's
// delivery comes back). A tenant never has more than perTenant attempts in
// flight (claimed, not yet recorded, lease not over), so one tenant's slow
// receivers cannot take every slot; the count is read before the claim, so
// two senders claiming at the same moment may pass it by a little.
// Concurrent senders get disjoint sets: a delivery another one claimed
// meanwhile is no longer due when this update reaches it.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, limit, perTenant int, lease time.Duration) ([]WebhookDelivery, error) {
	rows, err := s.pool.Query(ctx, `
		WITH busy AS (
			SELECT j.tenant, count(*) AS n FROM webhook_deliveries d JOIN jobs j ON j.id = d.job_id
			WHERE d.state = 'pending' AND d.in_flight_until > now() GROUP BY j.tenant
		), due AS (
			SELECT d.id, j.tenant, d.next_attempt_at,
				row_number() OVER (PARTITION BY j.tenant ORDER BY d.next_attempt_at, d.id) + coalesce(b.n, 0) AS slot
			FROM webhook_deliveries d JOIN jobs j ON j.id = d.job_id LEFT JOIN busy b ON b.tenant = j.tenant
			WHERE d.state = 'pending' AND d.next_attempt_at <= now()
		), picked AS (
			SELECT id, tenant FROM due WHERE slot <= $3 ORDER BY next_attempt_at, id LIMIT $1
		)
		UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_attempt_at = now() + $2 * interval '1 millisecond',
			in_flight_until = now() + $2 * interval '1 millisecond'
		FROM picked p JOIN tenants t ON t.id = p.tenant
		WHERE d.id = p.id AND d.state = 'pending' AND d.next_attempt_at <= now()
		RETURNING d.id, d.job_id::text, d.event, d.url, d.attempts, p.tenant, t.webhook_secret`, limit, lease.Milliseconds(), perTenant)
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
		next_attempt_at = coalesce($5, next_attempt_at), delivered_at = CASE WHEN $2 = 'delivered' THEN now() END,
		in_flight_until = NULL
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
