package store

import (
	"context"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// Row is one lookup of a job, as a worker sees it.
type Row struct {
	ID              int64
	JobID           string
	Chunk           int
	InputRow        int
	Ref             string
	Kind            domain.InputKind
	ProfileURL      string
	Name            string
	Company         string
	Domain          string
	Email           string
	Role            string
	State           domain.RowState
	Attempts        int
	FoundProfileURL string
	StagesDone      []domain.Stage
	AnyMatch        bool
}

// Done reports whether the row already has an outcome for stage.
func (r Row) Done(stage domain.Stage) bool {
	for _, s := range r.StagesDone {
		if s == stage {
			return true
		}
	}
	return false
}

// Claim is a set of rows a worker holds under a lease.
type Claim struct {
	Token string
	Rows  []Row
}

// IDs returns the claimed row ids.
func (c Claim) IDs() []int64 {
	ids := make([]int64, len(c.Rows))
	for i, r := range c.Rows {
		ids[i] = r.ID
	}
	return ids
}

// ClaimChunk claims the claimable rows of one chunk (pending, or retry_wait
// that is due) of a queued or running job, with a lease. A duplicate task
// finds nothing to claim. Rows come back in id order.
func (s *Store) ClaimChunk(ctx context.Context, jobID string, chunk int, lease time.Duration) (Claim, error) {
	token := uuid.NewString()
	rows, err := s.pool.Query(ctx, claimChunkSQL, jobID, chunk, token, lease.Milliseconds())
	if err != nil {
		return Claim{}, interpretError(err)
	}
	var claimed []Row
	var r Row
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.JobID, &r.Chunk, &r.InputRow, &r.Ref, &r.Kind, &r.ProfileURL, &r.Name,
		&r.Company, &r.Domain, &r.Email, &r.Role, &r.State, &r.Attempts, &r.FoundProfileURL, &r.StagesDone, &r.AnyMatch}, func() error {
		claimed = append(claimed, r)
		r = Row{}
		return nil
	})
	if err != nil {
		return Claim{}, interpretError(err)
	}
	sort.Slice(claimed, func(i, j int) bool { return claimed[i].ID < claimed[j].ID })
	return Claim{Token: token, Rows: claimed}, nil
}

var claimChunkSQL = `
	UPDATE job_rows r SET state = 'in_flight', lease_token = $3, lease_until = now() + $4 * interval '1 millisecond',
		next_attempt_at = NULL, updated_at = now()
	WHERE r.job_id = $1 AND r.chunk = $2 -- job_rows_chunk
	  AND (r.state = 'pending' OR (r.state = 'retry_wait' AND r.next_attempt_at <= now()))
	  -- The job's state, read once (a one-time filter), not once per row: the
	  -- jobs row is updated by every credit reservation and settlement, and
	  -- reading it a hundred times a claim, through its versions and their
	  -- MultiXacts, made the claim cost grow with the job.
	  AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $1 AND j.state IN ('queued', 'running'))
	RETURNING r.id, r.job_id::text, r.chunk, r.input_row, r.ref, r.input_kind, coalesce(r.profile_url, ''), coalesce(r.name, ''),
		coalesce(r.company, ''), coalesce(r.domain, ''), coalesce(r.email, ''), coalesce(r.role, ''), r.state, r.attempts,
		coalesce(r.found_profile_url, ''), r.stages_done, r.any_match`

// ExtendLease pushes the lease of the rows still held under token, and the
// lookup claims of the same token (by claimTTL).
func (s *Store) ExtendLease(ctx context.Context, token string, ids []int64, lease, claimTTL time.Duration) error {
	batch := &pgx.Batch{}
	batch.Queue(`UPDATE job_rows SET lease_until = now() + $3 * interval '1 millisecond'
		WHERE id = ANY($1) AND lease_token = $2 AND state = 'in_flight'`, ids, token, lease.Milliseconds())
	batch.Queue(extendClaimsSQL, token, claimTTL.Milliseconds())
	return interpretError(s.leases.SendBatch(ctx, batch).Close())
}

var extendClaimsSQL = `UPDATE lookup_claims l SET expires_at = now() + $2 * interval '1 millisecond' WHERE ` + tokenClaims("$1")

// ReleaseRows puts claimed rows back to pending without counting an attempt
// (the work was not done: budget exhausted, job paused, shutting down).
func (s *Store) ReleaseRows(ctx context.Context, token string, ids []int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE job_rows SET state = 'pending', lease_until = NULL, lease_token = NULL, updated_at = now()
		WHERE id = ANY($1) AND lease_token = $2 AND state = 'in_flight'`, ids, token)
	return interpretError(err)
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
		FROM (
			-- The chunks with rows in flight, from their counts
			-- (job_chunk_counts_in_flight), then their rows (job_rows_chunk):
			-- job_rows has no index on the lease, so that claims and saves
			-- update rows in place (migrations/00001_schema.sql).
			SELECT r.id FROM job_chunk_counts k
			JOIN job_rows r ON r.job_id = k.job_id AND r.chunk = k.chunk
			WHERE k.in_flight > 0 AND r.state = 'in_flight' AND r.lease_until < now()
			ORDER BY r.lease_until LIMIT $2 FOR UPDATE OF r SKIP LOCKED) x
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
