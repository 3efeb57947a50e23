package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Job states.
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobPaused    = "paused"
	JobCompleted = "completed"
	JobCanceled  = "canceled"
	JobFailed    = "failed"
)

// Row states. pending, in_flight and retry_wait are open; the others are terminal.
const (
	RowPending   = "pending"
	RowInFlight  = "in_flight"
	RowRetryWait = "retry_wait"
	RowMatched   = "matched"
	RowNoMatch   = "no_match"
	RowFailed    = "failed"
	RowSkipped   = "skipped"
)

// RowStates lists every row state, open ones first, in lifecycle order.
var RowStates = []string{RowPending, RowInFlight, RowRetryWait, RowMatched, RowNoMatch, RowFailed, RowSkipped}

// Job is one submitted list.
type Job struct {
	ID              string
	Tenant          string
	Name            string
	State           string
	StateReason     string
	Lookups         []string
	Roles           []string
	BudgetCredits   *int64
	CreditsReserved int64
	CreditsSpent    int64
	MaxAge          time.Duration
	TotalRows       int
	ChunkCount      int
	SourceFormat    string
	IdempotencyKey  *string
	CallbackURL     string // called when the job ends; "" for none
	CreatedAt       time.Time
	StartedAt       *time.Time
	FinishedAt      *time.Time
	UpdatedAt       time.Time
}

const jobColumns = `id::text, tenant, name, state, state_reason, lookups, roles, budget_credits,
	credits_reserved, credits_spent, max_age_seconds, total_rows, chunk_count, source_format,
	idempotency_key, coalesce(callback_url, ''), created_at, started_at, finished_at, updated_at`

func scanJob(row pgx.Row) (Job, error) {
	var j Job
	var maxAge int64
	err := row.Scan(&j.ID, &j.Tenant, &j.Name, &j.State, &j.StateReason, &j.Lookups, &j.Roles, &j.BudgetCredits,
		&j.CreditsReserved, &j.CreditsSpent, &maxAge, &j.TotalRows, &j.ChunkCount, &j.SourceFormat,
		&j.IdempotencyKey, &j.CallbackURL, &j.CreatedAt, &j.StartedAt, &j.FinishedAt, &j.UpdatedAt)
	if err != nil {
		return Job{}, interpretError(err)
	}
	j.MaxAge = time.Duration(maxAge) * time.Second
	return j, nil
}

// NewJob is what CreateJob stores.
type NewJob struct {
	Tenant         string
	Name           string
	Lookups        []string
	Roles          []string
	BudgetCredits  *int64
	MaxAge         time.Duration
	SourceFormat   string
	IdempotencyKey string // "" for none
	ChunkSize      int    // rows per chunk task
	CallbackURL    string // "" for none
}

// NewRow is one lookup of a new job.
type NewRow struct {
	InputRow   int
	Ref        string
	Kind       string // profile_url, email, name_company
	ProfileURL string
	Name       string
	Company    string
	Email      string
	Role       string
	Extra      map[string]string
}

// copyBatch is how many rows are buffered before each COPY: it bounds memory
// while keeping round trips few.
const copyBatch = 5000

// CreateJob stores a job and its rows in one transaction. feed is called once
// and must call add for every row; if feed returns an error nothing is stored
// and that error is returned. Rows go in with COPY, in batches.
//
// With an idempotency key already used by the tenant, CreateJob does not call
// feed and returns the first job with created=false.
func (s *Store) CreateJob(ctx context.Context, nj NewJob, feed func(add func(NewRow) error) error) (job Job, created bool, err error) {
	if nj.ChunkSize <= 0 {
		return Job{}, false, errors.New("store: chunk size must be positive")
	}
	var idem *string
	if nj.IdempotencyKey != "" {
		idem = &nj.IdempotencyKey
	}
	roles := nj.Roles
	if roles == nil {
		roles = []string{}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Job{}, false, interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit

	var jobID string
	err = tx.QueryRow(ctx, `
		INSERT INTO jobs (tenant, name, lookups, roles, budget_credits, max_age_seconds, source_format, idempotency_key, callback_url)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING id::text`,
		nj.Tenant, nj.Name, nj.Lookups, roles, nj.BudgetCredits, int64(nj.MaxAge/time.Second), nj.SourceFormat, idem, nullIfEmpty(nj.CallbackURL),
	).Scan(&jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		// The key was used before: the first job is the answer.
		_ = tx.Rollback(ctx)
		j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE tenant = $1 AND idempotency_key = $2`, nj.Tenant, nj.IdempotencyKey))
		return j, false, err
	}
	if err != nil {
		return Job{}, false, interpretError(err)
	}

	columns := []string{"job_id", "chunk", "input_row", "ref", "input_kind", "profile_url", "name", "company", "email", "role", "extra", "found_profile_url"}
	buf := make([][]any, 0, copyBatch)
	total := 0
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"job_rows"}, columns, pgx.CopyFromRows(buf)); err != nil {
			return fmt.Errorf("store: copy rows: %w", interpretError(err))
		}
		buf = buf[:0]
		return nil
	}
	add := func(r NewRow) error {
		var extra any
		if len(r.Extra) > 0 {
			b, err := json.Marshal(r.Extra)
			if err != nil {
				return err
			}
			extra = string(b)
		}
		found := nullIfEmpty(r.ProfileURL)
		buf = append(buf, []any{jobID, total / nj.ChunkSize, r.InputRow, r.Ref, r.Kind,
			nullIfEmpty(r.ProfileURL), nullIfEmpty(r.Name), nullIfEmpty(r.Company), nullIfEmpty(r.Email), nullIfEmpty(r.Role), extra, found})
		total++
		if len(buf) == copyBatch {
			return flush()
		}
		return nil
	}
	if err := feed(add); err != nil {
		return Job{}, false, err
	}
	if err := flush(); err != nil {
		return Job{}, false, err
	}
	chunks := (total + nj.ChunkSize - 1) / nj.ChunkSize
	if _, err := tx.Exec(ctx, `UPDATE jobs SET total_rows = $2, chunk_count = $3 WHERE id = $1`, jobID, total, chunks); err != nil {
		return Job{}, false, interpretError(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO job_chunks (job_id, chunk) SELECT $1, generate_series(0, $2 - 1)`, jobID, chunks); err != nil {
		return Job{}, false, interpretError(err)
	}
	job, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, jobID))
	if err != nil {
		return Job{}, false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Job{}, false, interpretError(err)
	}
	return job, true, nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// GetJob returns a job. With tenant "" any tenant's job is returned (workers);
// otherwise another tenant's job is ErrNotFound.
func (s *Store) GetJob(ctx context.Context, tenant, id string) (Job, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Job{}, ErrNotFound
	}
	return scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1 AND ($2 = '' OR tenant = $2)`, id, tenant))
}

// RowCounts returns the number of rows of a job in each state (every state present).
func (s *Store) RowCounts(ctx context.Context, jobID string) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT state, count(*) FROM job_rows WHERE job_id = $1 GROUP BY state`, jobID)
	if err != nil {
		return nil, interpretError(err)
	}
	counts := make(map[string]int, len(RowStates))
	for _, st := range RowStates {
		counts[st] = 0
	}
	var state string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&state, &n}, func() error {
		counts[state] = n
		return nil
	})
	return counts, interpretError(err)
}

// JobCursor is a position in a tenant's job list, newest first.
type JobCursor struct {
	CreatedAt time.Time
	ID        string
}

// ListJobs returns up to limit jobs of a tenant, newest first, after the cursor (nil: from the newest).
func (s *Store) ListJobs(ctx context.Context, tenant string, after *JobCursor, limit int) ([]Job, error) {
	var rows pgx.Rows
	var err error
	if after == nil {
		rows, err = s.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE tenant = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, tenant, limit)
	} else {
		if _, perr := uuid.Parse(after.ID); perr != nil {
			return nil, fmt.Errorf("store: bad cursor id")
		}
		rows, err = s.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE tenant = $1 AND (created_at, id) < ($2, $3::uuid)
			ORDER BY created_at DESC, id DESC LIMIT $4`, tenant, after.CreatedAt, after.ID, limit)
	}
	if err != nil {
		return nil, interpretError(err)
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
	return jobs, interpretError(rows.Err())
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
	case JobCanceled:
		return j, nil
	case JobCompleted, JobFailed:
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
		if _, err := tx.Exec(ctx, `UPDATE job_rows SET state = 'skipped', state_reason = 'canceled', finished_at = now(), updated_at = now(),
			next_attempt_at = NULL WHERE job_id = $1 AND state IN ('pending', 'retry_wait')`, id); err != nil {
			return Job{}, interpretError(err)
		}
		if _, err := tx.Exec(ctx, `
			WITH f AS (
				UPDATE jobs SET finished_at = now() WHERE id = $1
				AND NOT EXISTS (SELECT 1 FROM job_rows WHERE job_id = $1 AND state = 'in_flight')
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

// StartJob marks a queued job running (the first claim of one of its rows).
func (s *Store) StartJob(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `UPDATE jobs SET state = 'running', started_at = coalesce(started_at, now()), updated_at = now()
		WHERE id = $1 AND state = 'queued'`, id)
	return interpretError(err)
}

// PauseJob stops a queued or running job with a reason shown to the user.
// It reports whether this call paused it.
func (s *Store) PauseJob(ctx context.Context, id, reason string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET state = 'paused', state_reason = $2, updated_at = now()
		WHERE id = $1 AND state IN ('queued', 'running')`, id, reason)
	if err != nil {
		return false, interpretError(err)
	}
	return tag.RowsAffected() == 1, nil
}

// ResumeJob puts a paused job back to running; its chunks are due for the
// scheduler's next sweep.
func (s *Store) ResumeJob(ctx context.Context, id string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	tag, err := tx.Exec(ctx, `UPDATE jobs SET state = CASE WHEN started_at IS NULL THEN 'queued' ELSE 'running' END,
		state_reason = '', updated_at = now() WHERE id = $1 AND state = 'paused'`, id)
	if err != nil {
		return interpretError(err)
	}
	if tag.RowsAffected() == 1 {
		if _, err := tx.Exec(ctx, `UPDATE job_chunks SET enqueued_at = NULL WHERE job_id = $1`, id); err != nil {
			return interpretError(err)
		}
	}
	return interpretError(tx.Commit(ctx))
}

// FinishJobs marks finished every job with no open row: queued or running
// jobs become completed, canceled ones get their finished_at. With id != ""
// only that job is considered. It returns the jobs it finished.
func (s *Store) FinishJobs(ctx context.Context, id string) ([]Job, error) {
	// Rows of a canceled job released or set to wait after the cancel are skipped too.
	if _, err := s.pool.Exec(ctx, `UPDATE job_rows r SET state = 'skipped', state_reason = 'canceled', finished_at = now(),
			updated_at = now(), next_attempt_at = NULL
		FROM jobs j WHERE j.id = r.job_id AND j.state = 'canceled' AND j.finished_at IS NULL AND ($1 = '' OR j.id = $1::uuid)
		  AND r.state IN ('pending', 'retry_wait')`, id); err != nil {
		return nil, interpretError(err)
	}
	// The completion webhook is queued in the same statement: a job never
	// ends without its delivery on record.
	rows, err := s.pool.Query(ctx, `
		WITH f AS (
			UPDATE jobs j SET state = CASE WHEN j.state = 'canceled' THEN 'canceled' ELSE 'completed' END,
				state_reason = CASE WHEN j.state = 'canceled' THEN j.state_reason ELSE '' END,
				finished_at = now(), updated_at = now()
			WHERE j.state IN ('queued', 'running', 'canceled') AND j.finished_at IS NULL
			  AND ($1 = '' OR j.id = $1::uuid)
			  AND NOT EXISTS (SELECT 1 FROM job_rows r WHERE r.job_id = j.id AND r.state IN ('pending', 'in_flight', 'retry_wait'))
			RETURNING j.*),
		d AS (
			INSERT INTO webhook_deliveries (job_id, url) SELECT id, callback_url FROM f WHERE callback_url IS NOT NULL
			ON CONFLICT DO NOTHING)
		SELECT `+jobColumns+` FROM f`, id)
	if err != nil {
		return nil, interpretError(err)
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
	return jobs, interpretError(rows.Err())
}
