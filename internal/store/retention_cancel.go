package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// RetentionCancelReason is the state_reason of a job that retention
// canceled: it had not changed for longer than its tenant's window.
const RetentionCancelReason = "canceled by retention: the job had not changed for longer than the tenant's retention window"

// abandonedJobsSQL seeks, for each tenant with a window, its unfinished
// jobs not updated within it (jobs_unfinished), then checks their chunks'
// last dispatch.
const abandonedJobsSQL = `SELECT j.id::text, x.last FROM tenants t CROSS JOIN LATERAL (
		SELECT j.* FROM jobs j WHERE j.tenant = t.id AND j.finished_at IS NULL
		  AND j.updated_at < $1::timestamptz - t.retention_seconds * interval '1 second') j,
		LATERAL (SELECT greatest(j.updated_at,
			(SELECT max(c.enqueued_at) FROM job_chunks c WHERE c.job_id = j.id),
			(SELECT max(c.enqueued_at) FROM platform_sync_chunks c WHERE c.job_id = j.id)) AS last) x
		WHERE t.retention_seconds IS NOT NULL AND j.state IN ('queued', 'running', 'paused')
		  AND x.last < $1::timestamptz - t.retention_seconds * interval '1 second'
		ORDER BY x.last LIMIT $2`

// cancelAbandoned cancels, for every tenant with a retention window, up to
// batch jobs that have not finished and have not changed for longer than the
// window: a job paused and never resumed, or one stuck with nothing
// dispatched. A job changes while it runs (a chunk handed to the queue, a
// credit reserved or settled, a pause or resume: jobs.updated_at and the
// chunks' enqueued_at), so a job at work is never taken. The job is
// canceled as a cancel does (its waiting rows skipped, its callback sent)
// and, with no row in flight, finished as of its last change, which makes
// it due for the purge at once: its data is older than the window already.
func (s *Store) cancelAbandoned(ctx context.Context, now time.Time, batch int) (int64, error) {
	rows, err := s.pool.Query(ctx, abandonedJobsSQL, now, batch)
	if err != nil {
		return 0, interpretError(err)
	}
	type job struct {
		id   string
		last time.Time
	}
	var found []job
	var j job
	if _, err := pgx.ForEachRow(rows, []any{&j.id, &j.last}, func() error {
		found = append(found, j)
		return nil
	}); err != nil {
		return 0, interpretError(err)
	}
	var n int64
	for _, j := range found {
		canceled := false
		err := s.inTx(ctx, func(tx pgx.Tx) error {
			// Only if it has not changed since it was read.
			tag, err := tx.Exec(ctx, `UPDATE jobs SET state = 'canceled', state_reason = $2, updated_at = now()
				WHERE id = $1 AND finished_at IS NULL AND state IN ('queued', 'running', 'paused') AND updated_at <= $3`,
				j.id, RetentionCancelReason, j.last)
			if err != nil || tag.RowsAffected() == 0 {
				return interpretError(err)
			}
			canceled = true
			if _, err := tx.Exec(ctx, skipCanceledRows+`
				WHERE r.job_id = $1::uuid AND r.state IN ('pending', 'retry_wait') AND `+waitingChunkOfJob1, j.id); err != nil {
				return interpretError(err)
			}
			_, err = tx.Exec(ctx, `
				WITH f AS (
					UPDATE jobs SET finished_at = $2 WHERE id = $1
					AND NOT EXISTS (SELECT 1 FROM job_chunk_counts WHERE job_id = $1 AND in_flight > 0)
					RETURNING id, callback_url)
				INSERT INTO webhook_deliveries (job_id, url) SELECT id, callback_url FROM f WHERE callback_url IS NOT NULL
				ON CONFLICT DO NOTHING`, j.id, j.last)
			return interpretError(err)
		})
		if err != nil {
			return n, err
		}
		if canceled {
			n++
		}
	}
	return n, nil
}
