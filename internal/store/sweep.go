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

// ReclaimExpiredLeases returns rows whose lease expired (their worker was
// lost) to pending, counting a failed attempt; a row that reaches
// maxAttempts this way ends failed. It returns the chunks that got work back.
func (s *Store) ReclaimExpiredLeases(ctx context.Context, maxAttempts, limit int) ([]ChunkRef, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE job_rows r SET
			attempts = r.attempts + 1,
			state = CASE WHEN r.attempts + 1 >= $1 THEN 'failed' ELSE 'pending' END,
			state_reason = CASE WHEN r.attempts + 1 >= $1 THEN 'attempts exhausted: ' || coalesce(nullif(r.last_error, ''), 'lease expired') ELSE '' END,
			last_error = 'lease expired: the worker holding the row was lost',
			finished_at = CASE WHEN r.attempts + 1 >= $1 THEN now() END,
			lease_until = NULL, lease_token = NULL, updated_at = now()
		FROM (SELECT id FROM job_rows WHERE state = 'in_flight' AND lease_until < now() ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED) x
		WHERE r.id = x.id
		RETURNING r.job_id::text, r.chunk`, maxAttempts, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	refs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ChunkRef])
	return dedupChunks(refs), interpretError(err)
}

func dedupChunks(refs []ChunkRef) []ChunkRef {
	seen := make(map[ChunkRef]bool, len(refs))
	out := refs[:0]
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
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

// ChunksToEnqueue picks chunks of queued or running jobs that have work to
// do now (pending rows, or retry_wait rows that are due) and were not handed
// to the queue within recheck, oldest job first, and stamps them as enqueued.
// Concurrent schedulers get disjoint sets (SKIP LOCKED).
func (s *Store) ChunksToEnqueue(ctx context.Context, recheck time.Duration, limit int) ([]ChunkRef, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE job_chunks c SET enqueued_at = now()
		FROM (
			SELECT c.job_id, c.chunk FROM job_chunks c JOIN jobs j ON j.id = c.job_id
			WHERE j.state IN ('queued', 'running')
			  AND (c.enqueued_at IS NULL OR c.enqueued_at < now() - $1 * interval '1 millisecond')
			  AND EXISTS (SELECT 1 FROM job_rows r WHERE r.job_id = c.job_id AND r.chunk = c.chunk
			              AND r.state IN ('pending', 'in_flight', 'retry_wait')
			              AND (r.state = 'pending' OR (r.state = 'retry_wait' AND r.next_attempt_at <= now())))
			ORDER BY j.created_at, c.chunk
			LIMIT $2
			FOR UPDATE OF c SKIP LOCKED) d
		WHERE c.job_id = d.job_id AND c.chunk = d.chunk
		RETURNING c.job_id::text, c.chunk`, recheck.Milliseconds(), limit)
	if err != nil {
		return nil, interpretError(err)
	}
	refs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ChunkRef])
	return refs, interpretError(err)
}

// NextChunks picks up to n chunks of one job that have work to do now and
// were never handed to the queue (or not within recheck), lowest first, and
// stamps them as enqueued. With it a worker that finishes a chunk hands the
// job's next one to the queue at once, so a job keeps a few chunks in the
// queue rather than all of them, and jobs take turns (chunk interleaving:
// a big job cannot fill the queue ahead of a small one). Concurrent callers
// get disjoint sets (SKIP LOCKED).
func (s *Store) NextChunks(ctx context.Context, jobID string, n int, recheck time.Duration) ([]ChunkRef, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE job_chunks c SET enqueued_at = now()
		FROM (
			-- The chunk's counts say whether it has work, without a look at its rows
			-- (a chunk whose waiting rows are not due yet comes back to the queue
			-- early, claims nothing and is put back until they are).
			SELECT c.job_id, c.chunk FROM job_chunks c
			JOIN job_chunk_counts k ON k.job_id = c.job_id AND k.chunk = c.chunk
			WHERE c.job_id = $1::uuid
			  AND (c.enqueued_at IS NULL OR c.enqueued_at < now() - $3 * interval '1 millisecond')
			  AND (k.pending > 0 OR k.retry_wait > 0)
			  AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $1::uuid AND j.state IN ('queued', 'running'))
			ORDER BY c.chunk
			LIMIT $2
			FOR UPDATE OF c SKIP LOCKED) d
		WHERE c.job_id = d.job_id AND c.chunk = d.chunk
		RETURNING c.job_id::text, c.chunk`, jobID, n, recheck.Milliseconds())
	if err != nil {
		return nil, interpretError(err)
	}
	refs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ChunkRef])
	return refs, interpretError(err)
}

// MarkEnqueued stamps chunks as handed to the queue now.
func (s *Store) MarkEnqueued(ctx context.Context, jobID string, chunks []int) error {
	_, err := s.pool.Exec(ctx, `UPDATE job_chunks SET enqueued_at = now() WHERE job_id = $1 AND chunk = ANY($2)`, jobID, chunks)
	return interpretError(err)
}

// NextDue returns when the earliest retry_wait row of a chunk is due; ok is false when there is none.
func (s *Store) NextDue(ctx context.Context, ref ChunkRef) (due time.Time, ok bool, err error) {
	var t *time.Time
	// Most chunks have no row waiting: the chunk's counts say so without a look at its rows.
	err = s.pool.QueryRow(ctx, `SELECT min(next_attempt_at) FROM job_rows
		WHERE job_id = $1 AND chunk = $2 AND state = 'retry_wait'
		  AND EXISTS (SELECT 1 FROM job_chunk_counts WHERE job_id = $1 AND chunk = $2 AND retry_wait > 0)`,
		ref.JobID, ref.Chunk).Scan(&t)
	if err != nil || t == nil {
		return time.Time{}, false, interpretError(err)
	}
	return *t, true, nil
}

// Now returns the database's clock, the one leases and due times are compared against.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&t)
	return t, interpretError(err)
}
