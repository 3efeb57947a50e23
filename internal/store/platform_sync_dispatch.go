package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// PlatformChunksToEnqueue picks member sync chunks of queued or running jobs
// with work to do: pending rows not handed to the queue within recheck, or
// retry_wait rows due at now that became due since the chunk was last handed
// (or longer ago than recheck), and stamps them enqueued. Due times are
// compared with now (the caller's clock, which midnight UTC parking runs
// on); the dispatch stamps use the database's clock, like leases.
// Concurrent schedulers get disjoint sets (SKIP LOCKED).
func (s *Store) PlatformChunksToEnqueue(ctx context.Context, now time.Time, recheck time.Duration, limit int) ([]ChunkRef, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE platform_sync_chunks c SET enqueued_at = now()
		FROM (
			SELECT c.job_id, c.chunk FROM platform_sync_chunks c JOIN jobs j ON j.id = c.job_id
			WHERE j.state IN ('queued', 'running')
			  -- Chunks with open rows, from their counts; then their rows (job_rows_chunk).
			  AND EXISTS (SELECT 1 FROM job_chunk_counts k WHERE k.job_id = c.job_id AND k.chunk = c.chunk AND k.pending + k.retry_wait > 0)
			  AND EXISTS (SELECT 1 FROM job_rows r WHERE r.job_id = c.job_id AND r.chunk = c.chunk AND (
			        (r.state = 'pending' AND (c.enqueued_at IS NULL OR c.enqueued_at <= now() - $2::bigint * interval '1 millisecond'))
			     OR (r.state = 'retry_wait' AND r.next_attempt_at <= $1::timestamptz
			         AND (c.enqueued_at IS NULL OR c.enqueued_at <= now() - $2::bigint * interval '1 millisecond'
			              OR c.enqueued_at < r.next_attempt_at))))
			ORDER BY j.created_at, c.chunk
			LIMIT $3
			FOR UPDATE OF c SKIP LOCKED) d
		WHERE c.job_id = d.job_id AND c.chunk = d.chunk
		RETURNING c.job_id::text, c.chunk`, now, recheck.Milliseconds(), limit)
	if err != nil {
		return nil, interpretError(err)
	}
	refs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ChunkRef])
	return refs, interpretError(err)
}

// MarkPlatformChunksEnqueued stamps member sync chunks as handed to the queue now.
func (s *Store) MarkPlatformChunksEnqueued(ctx context.Context, jobID string, chunks []int) error {
	_, err := s.pool.Exec(ctx, `UPDATE platform_sync_chunks SET enqueued_at = now() WHERE job_id = $1 AND chunk = ANY($2)`, jobID, chunks)
	return interpretError(err)
}

// OpenPlatformChunks returns the chunks of member sync job jobID that have
// rows pending or waiting, from their counts (no scan of the job's rows).
func (s *Store) OpenPlatformChunks(ctx context.Context, jobID string) ([]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.chunk FROM platform_sync_chunks c
		JOIN job_chunk_counts k ON k.job_id = c.job_id AND k.chunk = c.chunk
		WHERE c.job_id = $1 AND k.pending + k.retry_wait > 0 ORDER BY c.chunk`, jobID)
	if err != nil {
		return nil, interpretError(err)
	}
	chunks, err := pgx.CollectRows(rows, pgx.RowTo[int])
	return chunks, interpretError(err)
}
