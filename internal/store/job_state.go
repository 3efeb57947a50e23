package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// StartJob marks a queued job running (the first claim of one of its rows).
func (s *Store) StartJob(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `UPDATE jobs SET state = 'running', started_at = coalesce(started_at, now()), updated_at = now()
		WHERE id = $1 AND state = 'queued'`, id)
	return interpretError(err)
}

// CancelJob cancels a job: rows not yet claimed become skipped (canceled);
// rows in flight finish. Canceling a canceled job is a no-op; canceling a
// finished one is ErrConflict.
func (s *Store) CancelJob(ctx context.Context, tenant, id string) (Job, error) {
	j, err := s.GetJob(ctx, tenant, id)
	if err != nil {
		return Job{}, err
	}
	switch j.State {
	case domain.JobCanceled:
		return j, nil
	case domain.JobCompleted, domain.JobFailed:
		return j, fmt.Errorf("%w: job is already %s", ErrConflict, j.State)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Job{}, interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	tag, err := tx.Exec(ctx, `UPDATE jobs SET state = 'canceled', state_reason = 'canceled by the user', updated_at = now()
		WHERE id = $1 AND state IN ('queued', 'running', 'paused')`, id)
	if err != nil {
		return Job{}, interpretError(err)
	}
	if tag.RowsAffected() == 1 {
		if _, err := tx.Exec(ctx, skipCanceledRows+`
			WHERE r.job_id = $1::uuid AND r.state IN ('pending', 'retry_wait') AND `+waitingChunkOfJob1, id); err != nil {
			return Job{}, interpretError(err)
		}
		if _, err := tx.Exec(ctx, `
			WITH f AS (
				UPDATE jobs SET finished_at = now() WHERE id = $1
				AND NOT EXISTS (SELECT 1 FROM job_chunk_counts WHERE job_id = $1 AND in_flight > 0)
				RETURNING id, callback_url)
			INSERT INTO webhook_deliveries (job_id, url) SELECT id, callback_url FROM f WHERE callback_url IS NOT NULL
			ON CONFLICT DO NOTHING`, id); err != nil {
			return Job{}, interpretError(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return Job{}, interpretError(err)
	}
	return s.GetJob(ctx, tenant, id)
}

// skipCanceledRows is the start of the update that skips rows of a canceled
// job (its FROM and WHERE follow).
const skipCanceledRows = `UPDATE job_rows r SET state = 'skipped', state_reason = 'canceled', finished_at = now(),
	updated_at = now(), next_attempt_at = NULL`

// waitingChunkOfJob1 keeps to the chunks of job $1 with rows pending or
// waiting, from their counts: job_rows has no index on the state
// (migrations/00001_schema.sql).
const waitingChunkOfJob1 = `r.chunk IN (SELECT chunk FROM job_chunk_counts WHERE job_id = $1::uuid AND pending + retry_wait > 0)`

// openChunk finds a chunk of job j with an open row, from the per-chunk counts
// (kept by triggers on job_rows), last chunks first: they are the ones still
// open while a job runs. Asking job_rows instead ("a row of the job in an open
// state") scanned, in the index of open rows, the entries left by every row
// finished so far (without a vacuum in between): after every chunk, a cost
// that grew with the job.
const openChunk = `SELECT 1 FROM job_chunk_counts oc WHERE oc.job_id = j.id AND oc.pending + oc.in_flight + oc.retry_wait > 0
	ORDER BY oc.chunk DESC LIMIT 1`

// FinishJobs marks finished every job with no open row: queued or running
// jobs become completed, canceled ones get their finished_at. With id != ""
// only that job is considered. It returns the jobs it finished.
func (s *Store) FinishJobs(ctx context.Context, id string) ([]Job, error) {
	// Rows of a canceled job released or set to wait after the cancel are skipped too.
	// With an id (the worker, after every chunk) the job is checked first,
	// once (a one-time filter), so a running job's rows are never scanned;
	// and "j.id = $1" rather than "($1 = '' OR j.id = $1)", whose cached
	// generic plan scans every job.
	var args []any
	skip, finish := skipCanceledRowsSQL, finishJobsSQL("")
	if id != "" {
		if _, err := uuid.Parse(id); err != nil {
			return nil, nil
		}
		args, skip, finish = []any{id}, skipCanceledRowsOfJobSQL, finishJobSQL
	}
	// Both statements in one round trip (one implicit transaction: the
	// second sees the rows the first skipped).
	batch := &pgx.Batch{}
	batch.Queue(skip, args...)
	batch.Queue(finish, args...)
	br := s.pool.SendBatch(ctx, batch)
	jobs, err := finishedJobs(br)
	if cerr := br.Close(); err == nil { // the implicit transaction's end
		err = cerr
	}
	if err != nil {
		return nil, interpretError(err)
	}
	return jobs, nil
}

// The two statements of FinishJobs, for every job and for job $1.
var (
	// Each canceled job (jobs_open), then its chunks with waiting rows, then
	// their rows through (job_id, chunk), each step a lateral lookup: joined
	// to jobs, a fresh job's rows were read whole by a hash join, every
	// round of the finisher (0.26 s at 100,000 rows with nothing canceled).
	skipCanceledRowsSQL = skipCanceledRows + `
		WHERE r.id = ANY(ARRAY(
			SELECT x.id FROM jobs j,
				LATERAL (SELECT k.chunk FROM job_chunk_counts k WHERE k.job_id = j.id AND k.pending + k.retry_wait > 0) k,
				LATERAL (SELECT r2.id FROM job_rows r2 WHERE r2.job_id = j.id AND r2.chunk = k.chunk
					AND r2.state IN ('pending', 'retry_wait')) x
			WHERE j.state = 'canceled' AND j.finished_at IS NULL))
		  AND r.state IN ('pending', 'retry_wait')`
	skipCanceledRowsOfJobSQL = skipCanceledRows + `
		WHERE r.job_id = $1::uuid AND r.state IN ('pending', 'retry_wait') AND ` + waitingChunkOfJob1 + `
		  AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $1::uuid AND j.state = 'canceled' AND j.finished_at IS NULL)`
	finishJobSQL = finishJobsSQL(" AND j.id = $1::uuid")
)

// finishJobsSQL finishes the jobs without an open row, among those only
// (an extra condition on jobs j) picks. A job holding a reservation that a
// later answer has explained waits for the explain step (its credits would
// not be final, nor its callback's).
func finishJobsSQL(only string) string {
	return `
		WITH f AS (
			UPDATE jobs j SET state = CASE WHEN j.state = 'canceled' THEN 'canceled' ELSE 'completed' END,
				state_reason = CASE WHEN j.state = 'canceled' THEN j.state_reason ELSE '' END,
				finished_at = now(), updated_at = now()
			WHERE j.state IN ('queued', 'running', 'canceled') AND j.finished_at IS NULL` + only + `
			  AND NOT EXISTS (` + openChunk + `)
			  AND NOT EXISTS (` + explainableReserved + `)
			RETURNING j.*),
		d AS (
			INSERT INTO webhook_deliveries (job_id, url) SELECT id, callback_url FROM f WHERE callback_url IS NOT NULL
			ON CONFLICT DO NOTHING)
		SELECT ` + jobColumns + ` FROM f`
}

// finishedJobs reads FinishJobs' batch: the skip, then the jobs finished
// (the completion webhook is queued in the same statement: a job never ends
// without its delivery on record).
func finishedJobs(br pgx.BatchResults) ([]Job, error) {
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var jobs []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, rows.Err()
}
