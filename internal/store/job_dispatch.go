package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ChunkRef names one chunk of one job: what a task carries.
type ChunkRef struct {
	JobID string
	Chunk int
}

// ForgetEnqueued clears the enqueued stamp of every chunk of a queued or
// running job, so that the next ChunksToEnqueue hands them all again: the
// queue they were handed to is gone. It returns how many it cleared.
func (s *Store) ForgetEnqueued(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE job_chunks SET enqueued_at = NULL
		WHERE enqueued_at IS NOT NULL AND job_id IN (SELECT id FROM jobs WHERE state IN ('queued', 'running'))`)
	if err != nil {
		return 0, interpretError(err)
	}
	return tag.RowsAffected(), nil
}

// DefaultWindow is how many chunks of one job are in the queue at once by
// default (see DispatchChunks).
const DefaultWindow = 64

// DispatchChunks picks the chunks to hand to the queue now and stamps them
// as enqueued: chunks of queued or running jobs (of jobID only, when not
// empty) that have work to do now (pending rows, or retry_wait rows that
// are due) and were not handed to the queue within recheck (never, or their
// task was lost), oldest job first, lowest chunk first, up to limit.
//
// A job has at most window chunks in the queue at once: chunks handed
// within recheck that still have open rows count against it. A worker that
// finishes a chunk dispatches the job's next one, so a big job keeps a
// window of chunks in the queue rather than all of them, and the chunks of
// a job submitted later queue behind a window, not behind the whole of the
// big job (chunk interleaving: a big job cannot starve small ones).
//
// The stamp is taken in the same statement as the choice: concurrent
// callers (two workers, a worker and the scheduler) never hand one chunk
// twice within recheck.
func (s *Store) DispatchChunks(ctx context.Context, jobID string, window int, recheck time.Duration, limit int) ([]ChunkRef, error) {
	if window <= 0 {
		window = DefaultWindow
	}
	var job any
	if jobID != "" {
		job = jobID
	}
	rows, err := s.pool.Query(ctx, `
		WITH active AS (
			SELECT id, created_at FROM jobs WHERE state IN ('queued', 'running') AND ($1::uuid IS NULL OR id = $1)),
		live AS (
			SELECT c.job_id, count(*) AS n FROM job_chunks c
			JOIN active a ON a.id = c.job_id
			JOIN job_chunk_counts k ON k.job_id = c.job_id AND k.chunk = c.chunk
			WHERE c.enqueued_at >= now() - $3 * interval '1 millisecond'
			  AND k.pending + k.in_flight + k.retry_wait > 0
			GROUP BY c.job_id),
		due AS (
			SELECT c.job_id, c.chunk, a.created_at,
				row_number() OVER (PARTITION BY c.job_id ORDER BY c.chunk) AS rn
			FROM job_chunks c
			JOIN active a ON a.id = c.job_id
			JOIN job_chunk_counts k ON k.job_id = c.job_id AND k.chunk = c.chunk
			WHERE (c.enqueued_at IS NULL OR c.enqueued_at < now() - $3 * interval '1 millisecond')
			  AND (k.pending > 0 OR (k.retry_wait > 0 AND EXISTS (
			      SELECT 1 FROM job_rows r WHERE r.job_id = c.job_id AND r.chunk = c.chunk
			        AND r.state = 'retry_wait' AND r.next_attempt_at <= now())))) -- job_rows_chunk
		UPDATE job_chunks c SET enqueued_at = now()
		FROM (
			SELECT d.job_id, d.chunk, d.created_at FROM due d LEFT JOIN live l ON l.job_id = d.job_id
			WHERE d.rn <= $2 - coalesce(l.n, 0)
			ORDER BY d.created_at, d.chunk
			LIMIT $4) x
		WHERE c.job_id = x.job_id AND c.chunk = x.chunk
		  -- Another caller may have stamped it meanwhile: this is read again
		  -- on the row's latest version once its lock is free.
		  AND (c.enqueued_at IS NULL OR c.enqueued_at < now() - $3 * interval '1 millisecond')
		RETURNING c.job_id::text, c.chunk`, job, window, recheck.Milliseconds(), limit)
	if err != nil {
		return nil, interpretError(err)
	}
	refs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ChunkRef])
	return refs, interpretError(err)
}

// DispatchNext picks the n lowest chunks of a queued or running job that
// were never handed to the queue, and stamps them: a worker calls it as a
// chunk of the job ends, so the next one takes its place in the queue and
// the job keeps its window (DispatchChunks hands the first window and
// anything lost). Cheap: an index holds the chunks never dispatched.
func (s *Store) DispatchNext(ctx context.Context, jobID string, n int) ([]ChunkRef, error) {
	rows, err := s.pool.Query(ctx, dispatchNextSQL, jobID, n)
	if err != nil {
		return nil, interpretError(err)
	}
	refs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ChunkRef])
	return refs, interpretError(err)
}

var dispatchNextSQL = `
	UPDATE job_chunks c SET enqueued_at = now()
	FROM (
		SELECT job_id, chunk FROM job_chunks
		WHERE job_id = $1::uuid AND enqueued_at IS NULL -- job_chunks_undispatched
		  AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $1::uuid AND j.state IN ('queued', 'running'))
		ORDER BY chunk
		LIMIT $2
		FOR UPDATE SKIP LOCKED) x
	WHERE c.job_id = x.job_id AND c.chunk = x.chunk
	RETURNING c.job_id::text, c.chunk`

// UnmarkEnqueued clears the stamps of chunks that could not be handed to
// the queue after all (Redis was unavailable): the next dispatch hands them.
func (s *Store) UnmarkEnqueued(ctx context.Context, refs []ChunkRef) error {
	jobs := make([]string, len(refs))
	chunks := make([]int32, len(refs))
	for i, r := range refs {
		jobs[i], chunks[i] = r.JobID, int32(r.Chunk)
	}
	_, err := s.pool.Exec(ctx, `UPDATE job_chunks c SET enqueued_at = NULL
		FROM unnest($1::uuid[], $2::int[]) AS u(job_id, chunk) WHERE c.job_id = u.job_id AND c.chunk = u.chunk`, jobs, chunks)
	return interpretError(err)
}

// NextDue returns when the earliest retry_wait row of a chunk is due; ok is false when there is none.
func (s *Store) NextDue(ctx context.Context, ref ChunkRef) (due time.Time, ok bool, err error) {
	var t *time.Time
	// Most chunks have no row waiting: the chunk's counts say so without a look at its rows.
	err = s.pool.QueryRow(ctx, nextDueSQL, ref.JobID, ref.Chunk).Scan(&t)
	if err != nil || t == nil {
		return time.Time{}, false, interpretError(err)
	}
	return *t, true, nil
}

var nextDueSQL = `SELECT min(next_attempt_at) FROM job_rows
	WHERE job_id = $1 AND chunk = $2 AND state = 'retry_wait'
	  AND EXISTS (SELECT 1 FROM job_chunk_counts WHERE job_id = $1 AND chunk = $2 AND retry_wait > 0)`

// NextAttempt returns the earliest due time of a job's retry_wait rows; nil when none waits.
func (s *Store) NextAttempt(ctx context.Context, jobID string) (*time.Time, error) {
	var t *time.Time
	err := s.pool.QueryRow(ctx, `SELECT min(r.next_attempt_at) FROM job_chunk_counts k
		JOIN job_rows r ON r.job_id = k.job_id AND r.chunk = k.chunk
		WHERE k.job_id = $1 AND k.retry_wait > 0 AND r.state = 'retry_wait'`, jobID).Scan(&t)
	return t, interpretError(err)
}
