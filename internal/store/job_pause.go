package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// PauseJob stops a queued or running job for cause, with a reason shown to
// the user. It reports whether this call paused it.
func (s *Store) PauseJob(ctx context.Context, id string, cause domain.PauseCause, reason string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET state = 'paused', state_reason = $2, paused_by = $3, paused_at = now(), updated_at = now()
		WHERE id = $1 AND state IN ('queued', 'running')`, id, reason, cause)
	if err != nil {
		return false, interpretError(err)
	}
	return tag.RowsAffected() == 1, nil
}

// ResumeJob puts a paused job back to running; its chunks (vendor and member
// sync alike) are due for the scheduler's next dispatch, not after the recheck.
func (s *Store) ResumeJob(ctx context.Context, id string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	tag, err := tx.Exec(ctx, `UPDATE jobs SET state = CASE WHEN started_at IS NULL THEN 'queued' ELSE 'running' END,
		state_reason = '', paused_by = NULL, paused_at = NULL, updated_at = now() WHERE id = $1 AND state = 'paused'`, id)
	if err != nil {
		return interpretError(err)
	}
	if tag.RowsAffected() == 1 {
		if _, err := tx.Exec(ctx, `UPDATE job_chunks SET enqueued_at = NULL WHERE job_id = $1`, id); err != nil {
			return interpretError(err)
		}
		if _, err := tx.Exec(ctx, `UPDATE platform_sync_chunks SET enqueued_at = NULL WHERE job_id = $1`, id); err != nil {
			return interpretError(err)
		}
	}
	return interpretError(tx.Commit(ctx))
}

// pauseCause is why a job is paused; "" when it is not.
func (s *Store) pauseCause(ctx context.Context, id string) (domain.PauseCause, error) {
	var cause *domain.PauseCause
	if err := s.pool.QueryRow(ctx, `SELECT paused_by FROM jobs WHERE id = $1`, id).Scan(&cause); err != nil {
		return "", interpretError(err)
	}
	if cause == nil {
		return "", nil
	}
	return *cause, nil
}

// JobPauseCause is why the tenant's job is paused; "" when it is not paused.
func (s *Store) JobPauseCause(ctx context.Context, tenant, id string) (domain.PauseCause, error) {
	if _, err := s.GetJob(ctx, tenant, id); err != nil {
		return "", err
	}
	return s.pauseCause(ctx, id)
}

// ResumeAllowancePaused resumes the jobs paused by a monthly allowance
// before the month of now (UTC) began: the allowance has renewed. It
// returns the jobs it resumed (at most limit).
func (s *Store) ResumeAllowancePaused(ctx context.Context, now time.Time, limit int) ([]string, error) {
	month := time.Date(now.UTC().Year(), now.UTC().Month(), 1, 0, 0, 0, 0, time.UTC)
	return s.resumePaused(ctx, `paused_by = 'allowance' AND paused_at < $1 ORDER BY paused_at LIMIT $2`, month, limit)
}

// ResumeVendorPaused resumes every job paused because the vendor refused
// the key or the plan (the operator fixed it: `api jobs resume`).
func (s *Store) ResumeVendorPaused(ctx context.Context) ([]string, error) {
	return s.resumePaused(ctx, `paused_by = 'vendor_access'`)
}

// resumePaused resumes the paused jobs that where (after "state = 'paused'
// AND") selects, one by one, and returns their ids.
func (s *Store) resumePaused(ctx context.Context, where string, args ...any) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id::text FROM jobs WHERE state = 'paused' AND `+where, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, interpretError(err)
	}
	for i, id := range ids {
		if err := s.ResumeJob(ctx, id); err != nil {
			return ids[:i], err
		}
	}
	return ids, nil
}
