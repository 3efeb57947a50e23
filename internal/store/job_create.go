package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// NewJob is what CreateJob stores.
type NewJob struct {
	Tenant         string
	Name           string
	Lookups        []domain.Stage
	Roles          []string
	BudgetCredits  *int64
	MaxAge         time.Duration
	SourceFormat   string
	IdempotencyKey string // "" for none
	// RequestOptions is what the request asked beyond its rows, as the
	// caller encodes it (the same bytes for the same request). With the rows
	// it makes the digest kept beside the idempotency key: the key sent again
	// with another request is refused (ErrIdempotencyKeyReused).
	RequestOptions []byte
	ChunkSize      int    // rows per chunk task
	CallbackURL    string // "" for none
	// Vendors is the job's own vendor order (the `vendors` option); nil:
	// the tenants' order.
	Vendors []string
	// Upload, when set, is called once the feed has returned without an
	// error: what the upload held, stored with the job.
	Upload func() Upload
}

// NewRow is one lookup of a new job.
type NewRow struct {
	InputRow   int
	Ref        string
	Kind       domain.InputKind
	ProfileURL string
	Name       string
	Company    string
	Domain     string
	Email      string
	Role       string
	Extra      map[string]string
	// SkipReason, when set, stores the row skipped with this reason: it is
	// never looked up (a suppressed person), and none of its input is kept
	// (see withoutPerson).
	SkipReason string
}

// withoutPerson is the row with nothing of its person: the input blanked,
// no extras (the input row's extras go, whatever its other lookups), and
// the ref kept (the caller's own id, to match the line up) unless it holds
// one of the row's own values.
func (r NewRow) withoutPerson() NewRow {
	ref := strings.ToLower(r.Ref)
	for _, v := range []string{r.Email, r.ProfileURL, r.Name, r.Domain} {
		if v = strings.ToLower(strings.TrimSpace(v)); v != "" && strings.Contains(ref, v) {
			ref = ""
			break
		}
	}
	if ref != "" {
		ref = r.Ref
	}
	return NewRow{InputRow: r.InputRow, Ref: ref, Kind: r.Kind, SkipReason: r.SkipReason}
}

// CreateJob stores a job and its rows in one transaction. feed is called once
// and must call add for every row; if feed returns an error nothing is stored
// and that error is returned. Rows go in with one COPY that streams while feed
// runs (copyJobRows): the upload is parsed while Postgres stores what came
// before, and there is no round trip per batch.
//
// With an idempotency key the tenant used before on a job (not a member
// sync: keys are scoped to their kind of request), CreateJob stores nothing
// and returns the first job with created=false; feed is called only to
// check that the request is the same as the first one (its options and
// rows), else ErrIdempotencyKeyReused.
func (s *Store) CreateJob(ctx context.Context, nj NewJob, feed func(add func(NewRow) error) error) (job Job, created bool, err error) {
	if err := needTenant(nj.Tenant); err != nil {
		return Job{}, false, err
	}
	if nj.ChunkSize <= 0 {
		return Job{}, false, errors.New("store: chunk size must be positive")
	}
	var digest *requestDigest
	if nj.IdempotencyKey != "" {
		digest = newRequestDigest(scopeJobs)
		digest.field(string(nj.RequestOptions))
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Job{}, false, interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit

	jobID, createdAt, err := insertJob(ctx, tx, nj)
	if errors.Is(err, pgx.ErrNoRows) {
		// The key was used before: the first job is the answer, if this is
		// the same request.
		_ = tx.Rollback(ctx)
		return s.replayJob(ctx, nj.Tenant, nj.IdempotencyKey, digest, feed)
	}
	if err != nil {
		return Job{}, false, interpretError(err)
	}
	extras := &inputExtras{jobID: jobID}
	defer extras.remove()
	total, err := copyJobRows(ctx, tx, jobID, createdAt, nj.ChunkSize, extras, digest, feed)
	if err != nil {
		return Job{}, false, err
	}
	if err := extras.copyTo(ctx, tx); err != nil {
		return Job{}, false, err
	}
	if err := finishJob(ctx, tx, nj, jobID, total, digest); err != nil {
		return Job{}, false, err
	}
	return s.commitJob(ctx, tx, jobID)
}

// insertJob inserts the job's record and returns its id and creation time;
// pgx.ErrNoRows when its idempotency key was used before.
func insertJob(ctx context.Context, tx pgx.Tx, nj NewJob) (jobID string, createdAt time.Time, err error) {
	var idem, scope *string
	if nj.IdempotencyKey != "" {
		idem, scope = &nj.IdempotencyKey, new(string(scopeJobs))
	}
	roles := nj.Roles
	if roles == nil {
		roles = []string{}
	}
	err = tx.QueryRow(ctx, `
		INSERT INTO jobs (tenant, name, lookups, roles, budget_credits, max_age_seconds, source_format, idempotency_key, idempotency_scope, callback_url, vendors)
		VALUES (@tenant, @name, @lookups, @roles, @budget, @max_age, @format, @idempotency_key, @scope, @callback_url, @vendors)
		ON CONFLICT (tenant, idempotency_scope, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING id::text, created_at`,
		pgx.StrictNamedArgs{"tenant": nj.Tenant, "name": nj.Name, "lookups": nj.Lookups, "roles": roles, "budget": nj.BudgetCredits,
			"max_age": int64(nj.MaxAge / time.Second), "format": nj.SourceFormat, "idempotency_key": idem, "scope": scope,
			"callback_url": nullIfEmpty(nj.CallbackURL), "vendors": nullIfNone(nj.Vendors)},
	).Scan(&jobID, &createdAt)
	return jobID, createdAt, err
}

// finishJob records what the rows came to (their count, chunks and the
// request's digest, and what the upload held) and makes the job's chunks.
func finishJob(ctx context.Context, tx pgx.Tx, nj NewJob, jobID string, total int, digest *requestDigest) error {
	chunks := (total + nj.ChunkSize - 1) / nj.ChunkSize
	var sum []byte
	if digest != nil {
		sum = digest.sum()
	}
	if _, err := tx.Exec(ctx, `UPDATE jobs SET total_rows = $2, chunk_count = $3, request_sha256 = $4 WHERE id = $1`, jobID, total, chunks, sum); err != nil {
		return interpretError(err)
	}
	if nj.Upload != nil {
		u := nj.Upload()
		cols, extra := u.Columns, u.ExtraColumns
		if cols == nil {
			cols = map[string]string{}
		}
		if extra == nil {
			extra = []string{}
		}
		if _, err := tx.Exec(ctx, `UPDATE jobs SET column_map = $2, extra_columns = $3, rows_uploaded = $4, distinct_lookups = $5 WHERE id = $1`,
			jobID, cols, extra, u.RowsUploaded, u.DistinctLookups); err != nil {
			return interpretError(err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO job_chunks (job_id, chunk) SELECT $1, generate_series(0, $2 - 1)`, jobID, chunks); err != nil {
		return interpretError(err)
	}
	return nil
}

// commitJob reads the job back and commits, its commit marked in the same
// round trip; when the answer to the commit is lost, the mark tells whether
// it committed.
func (s *Store) commitJob(ctx context.Context, tx pgx.Tx, jobID string) (Job, bool, error) {
	mark, err := uuid.NewV7()
	if err != nil {
		return Job{}, false, err
	}
	job, err := scanJob(tx.QueryRow(ctx, `WITH `+markSQL(`'{}'::bigint[]`)+` SELECT `+jobColumns+` FROM jobs WHERE id = @id`,
		pgx.StrictNamedArgs{"mark": mark, "id": jobID}))
	if err != nil {
		return Job{}, false, err
	}
	if err := tx.Commit(ctx); err != nil {
		if !answerLost(err) {
			return Job{}, false, interpretError(err)
		}
		// The upload is not run again here (its feed is spent); a job not
		// stored is an ErrUnavailable the client may send again.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_, committed, ferr := s.fence(fctx, mark)
		cancel()
		s.cutCommits.Add(1)
		switch {
		case ferr != nil:
			return Job{}, false, fmt.Errorf("store: create job %s: %w (%w)", jobID, ErrOutcomeUnknown, err)
		case !committed:
			return Job{}, false, fmt.Errorf("store: create job: not stored: %w", interpretError(err))
		}
	}
	return job, true, nil
}

// replayJob is the job of a tenant's idempotency key, when the request
// digest says it is the same request: feed is read for its rows (nothing is
// stored; a bad upload is its error, as for a first submit).
func (s *Store) replayJob(ctx context.Context, tenant, key string, digest *requestDigest, feed func(add func(NewRow) error) error) (Job, bool, error) {
	var j Job
	var maxAge int64
	var stored []byte
	err := s.pool.QueryRow(ctx, `SELECT `+jobColumns+`, request_sha256 FROM jobs
		WHERE tenant = $1 AND idempotency_scope = $2 AND idempotency_key = $3`, tenant, scopeJobs, key).
		Scan(append(jobDest(&j, &maxAge), &stored)...)
	if err != nil {
		return Job{}, false, interpretError(err)
	}
	j.MaxAge = time.Duration(maxAge) * time.Second
	if stored != nil {
		if err := feed(func(r NewRow) error { digest.row(r); return nil }); err != nil {
			return Job{}, false, err
		}
		if err := sameRequest(stored, digest.sum()); err != nil {
			return Job{}, false, err
		}
	}
	return j, false, nil
}

// nullIfNone is NULL for an empty list.
func nullIfNone(v []string) any {
	if len(v) == 0 {
		return nil
	}
	return v
}
