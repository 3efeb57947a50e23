package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Job is one submitted list.
type Job struct {
	ID              string
	Tenant          string
	Name            string
	State           domain.JobState
	StateReason     string
	Lookups         []domain.Stage
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
	Upload          Upload // what the upload held
	CreatedAt       time.Time
	StartedAt       *time.Time
	FinishedAt      *time.Time
	UpdatedAt       time.Time
	// PurgedAt is when retention removed the job's rows (the job keeps its
	// counts and credits); nil: not purged.
	PurgedAt *time.Time
}

// Upload is what a job's upload held, as its status shows it.
type Upload struct {
	Columns         map[string]string // uploaded header -> the field it was read as
	ExtraColumns    []string          // uploaded headers kept as extra columns, in file order
	RowsUploaded    *int              // data rows of the upload; nil: not recorded (member syncs)
	DistinctLookups *int              // distinct inputs among the lookups; nil: not recorded
}

const jobColumns = `id::text, tenant, name, state, state_reason, lookups, roles, budget_credits,
	credits_reserved, credits_spent, max_age_seconds, total_rows, chunk_count, source_format,
	idempotency_key, coalesce(callback_url, ''), column_map, extra_columns, rows_uploaded, distinct_lookups,
	created_at, started_at, finished_at, updated_at, purged_at`

func scanJob(row pgx.Row) (Job, error) {
	var j Job
	var maxAge int64
	err := row.Scan(jobDest(&j, &maxAge)...)
	if err != nil {
		return Job{}, interpretError(err)
	}
	j.MaxAge = time.Duration(maxAge) * time.Second
	return j, nil
}

// jobDest is where the columns of jobColumns scan to.
func jobDest(j *Job, maxAge *int64) []any {
	return []any{&j.ID, &j.Tenant, &j.Name, &j.State, &j.StateReason, &j.Lookups, &j.Roles, &j.BudgetCredits,
		&j.CreditsReserved, &j.CreditsSpent, maxAge, &j.TotalRows, &j.ChunkCount, &j.SourceFormat,
		&j.IdempotencyKey, &j.CallbackURL, &j.Upload.Columns, &j.Upload.ExtraColumns, &j.Upload.RowsUploaded, &j.Upload.DistinctLookups,
		&j.CreatedAt, &j.StartedAt, &j.FinishedAt, &j.UpdatedAt, &j.PurgedAt}
}

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

// copyBatch is how many rows the feed hands to the COPY at a time; a few
// batches in flight bound the memory an upload holds, whatever its size.
const copyBatch = 1000

// CreateJob stores a job and its rows in one transaction. feed is called once
// and must call add for every row; if feed returns an error nothing is stored
// and that error is returned. Rows go in with one COPY that streams while feed
// runs (feed runs on its own goroutine and hands rows over in batches): the
// upload is parsed while Postgres stores what came before, and there is no
// round trip per batch.
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
	var idem, scope *string
	var digest *requestDigest
	if nj.IdempotencyKey != "" {
		idem, scope = &nj.IdempotencyKey, new(string(scopeJobs))
		digest = newRequestDigest(scopeJobs)
		digest.field(string(nj.RequestOptions))
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
	var createdAt time.Time
	err = tx.QueryRow(ctx, `
		INSERT INTO jobs (tenant, name, lookups, roles, budget_credits, max_age_seconds, source_format, idempotency_key, idempotency_scope, callback_url)
		VALUES (@tenant, @name, @lookups, @roles, @budget, @max_age, @format, @idempotency_key, @scope, @callback_url)
		ON CONFLICT (tenant, idempotency_scope, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING id::text, created_at`,
		pgx.StrictNamedArgs{"tenant": nj.Tenant, "name": nj.Name, "lookups": nj.Lookups, "roles": roles, "budget": nj.BudgetCredits,
			"max_age": int64(nj.MaxAge / time.Second), "format": nj.SourceFormat, "idempotency_key": idem, "scope": scope,
			"callback_url": nullIfEmpty(nj.CallbackURL)},
	).Scan(&jobID, &createdAt)
	if errors.Is(err, pgx.ErrNoRows) {
		// The key was used before: the first job is the answer, if this is
		// the same request.
		_ = tx.Rollback(ctx)
		return s.replayJob(ctx, nj.Tenant, nj.IdempotencyKey, digest, feed)
	}
	if err != nil {
		return Job{}, false, interpretError(err)
	}

	columns := []string{"job_id", "chunk", "input_row", "ref", "input_kind", "profile_url", "name", "company", "domain", "email", "role", "found_profile_url",
		"state", "state_reason", "finished_at"}
	extras := &inputExtras{}
	defer extras.remove()
	fctx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	batches := make(chan [][]any, 4)
	fed := make(chan struct{})
	var total int
	var feedErr error
	go func() {
		defer close(fed)
		defer close(batches)
		buf := make([][]any, 0, copyBatch)
		send := func() error {
			select {
			case batches <- buf:
				buf = make([][]any, 0, copyBatch)
				return nil
			case <-fctx.Done():
				return fctx.Err()
			}
		}
		add := func(r NewRow) error {
			if digest != nil {
				digest.row(r)
			}
			state, finished := domain.RowPending, (*time.Time)(nil)
			if r.SkipReason != "" {
				state, finished = domain.RowSkipped, &createdAt
				r = r.withoutPerson()
				extras.drop(r.InputRow)
			}
			if err := extras.add(r.InputRow, r.Extra); err != nil {
				return err
			}
			found := nullIfEmpty(r.ProfileURL)
			buf = append(buf, []any{jobID, total / nj.ChunkSize, r.InputRow, r.Ref, r.Kind,
				nullIfEmpty(r.ProfileURL), nullIfEmpty(r.Name), nullIfEmpty(r.Company), nullIfEmpty(r.Domain), nullIfEmpty(r.Email), nullIfEmpty(r.Role), found,
				state, r.SkipReason, finished})
			total++
			if len(buf) == copyBatch {
				return send()
			}
			return nil
		}
		err := feed(add)
		if err == nil && len(buf) > 0 {
			err = send()
		}
		feedErr = err // read after batches is closed
	}()
	_, copyErr := tx.CopyFrom(ctx, pgx.Identifier{"job_rows"}, columns, &batchSource{batches: batches, feedErr: &feedErr})
	stopFeed() // a failed COPY stops the feed at its next row
	<-fed
	if feedErr != nil {
		return Job{}, false, feedErr
	}
	if copyErr != nil {
		return Job{}, false, fmt.Errorf("store: copy rows: %w", interpretError(copyErr))
	}
	if err := extras.copyTo(ctx, tx, jobID); err != nil {
		return Job{}, false, err
	}
	chunks := (total + nj.ChunkSize - 1) / nj.ChunkSize
	var sum []byte
	if digest != nil {
		sum = digest.sum()
	}
	if _, err := tx.Exec(ctx, `UPDATE jobs SET total_rows = $2, chunk_count = $3, request_sha256 = $4 WHERE id = $1`, jobID, total, chunks, sum); err != nil {
		return Job{}, false, interpretError(err)
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
			return Job{}, false, interpretError(err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO job_chunks (job_id, chunk) SELECT $1, generate_series(0, $2 - 1)`, jobID, chunks); err != nil {
		return Job{}, false, interpretError(err)
	}
	// The job is read back, and its commit marked, in one round trip.
	mark, err := uuid.NewV7()
	if err != nil {
		return Job{}, false, err
	}
	job, err = scanJob(tx.QueryRow(ctx, `WITH `+markSQL(`'{}'::bigint[]`)+` SELECT `+jobColumns+` FROM jobs WHERE id = @id`,
		pgx.StrictNamedArgs{"mark": mark, "id": jobID}))
	if err != nil {
		return Job{}, false, err
	}
	if err := tx.Commit(ctx); err != nil {
		if !answerLost(err) {
			return Job{}, false, interpretError(err)
		}
		// The answer to the commit was lost: find out. The upload is not
		// run again here (its feed is spent); a job not stored is an
		// ErrUnavailable the client may send again.
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

// batchSource is a pgx.CopyFromSource over the batches CreateJob's feed sends.
type batchSource struct {
	batches <-chan [][]any
	cur     [][]any
	i       int
	row     []any
	feedErr *error
	done    bool
}

func (b *batchSource) Next() bool {
	for b.i >= len(b.cur) {
		batch, ok := <-b.batches
		if !ok {
			b.done = true
			return false
		}
		b.cur, b.i = batch, 0
	}
	b.row = b.cur[b.i]
	b.i++
	return true
}

func (b *batchSource) Values() ([]any, error) { return b.row, nil }

// Err is the feed's error once it has finished (the channel is closed): the
// COPY is then aborted and nothing is stored.
func (b *batchSource) Err() error {
	if !b.done {
		return nil
	}
	return *b.feedErr
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// GetJob returns a job of tenant; another tenant's job is ErrNotFound, and
// an empty tenant ErrNoTenant.
func (s *Store) GetJob(ctx context.Context, tenant, id string) (Job, error) {
	if err := needTenant(tenant); err != nil {
		return Job{}, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return Job{}, ErrNotFound
	}
	return scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1 AND tenant = $2`, id, tenant))
}

// JobByID returns a job of any tenant. It is for internal callers that hold
// a job id from Postgres or the queue (workers, the scheduler, the operator's
// CLI); a tenant's request goes through GetJob.
func (s *Store) JobByID(ctx context.Context, id string) (Job, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Job{}, ErrNotFound
	}
	return scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, id))
}

// RowCounts returns the number of rows of a job in each state (every state
// present). It sums the job's per-chunk counts (job_chunk_counts, kept by
// triggers on job_rows in the same transactions as the rows): a status poll
// reads one small row per chunk instead of counting every row of the job.
func (s *Store) RowCounts(ctx context.Context, jobID string) (map[domain.RowState]int, error) {
	var n [7]int
	err := s.pool.QueryRow(ctx, `SELECT `+sumCounts+` FROM job_chunk_counts WHERE job_id = $1`, jobID).
		Scan(&n[0], &n[1], &n[2], &n[3], &n[4], &n[5], &n[6])
	if err != nil {
		return nil, interpretError(err)
	}
	return countsMap(n), nil
}

// openChunk finds a chunk of job j with an open row, from the per-chunk counts
// (kept by triggers on job_rows), last chunks first: they are the ones still
// open while a job runs. Asking job_rows instead ("a row of the job in an open
// state") scanned, in the index of open rows, the entries left by every row
// finished so far (without a vacuum in between): after every chunk, a cost
// that grew with the job.
const openChunk = `SELECT 1 FROM job_chunk_counts oc WHERE oc.job_id = j.id AND oc.pending + oc.in_flight + oc.retry_wait > 0
	ORDER BY oc.chunk DESC LIMIT 1`

// GetJobStatus is GetJob and RowCounts in one round trip: what a status
// poll needs.
func (s *Store) GetJobStatus(ctx context.Context, tenant, id string) (Job, map[domain.RowState]int, error) {
	if err := needTenant(tenant); err != nil {
		return Job{}, nil, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return Job{}, nil, ErrNotFound
	}
	var j Job
	var maxAge int64
	var n [7]int
	dest := append(jobDest(&j, &maxAge), &n[0], &n[1], &n[2], &n[3], &n[4], &n[5], &n[6])
	err := s.pool.QueryRow(ctx, `SELECT `+jobColumns+`, k.* FROM jobs
		CROSS JOIN LATERAL (SELECT `+sumCounts+` FROM job_chunk_counts c WHERE c.job_id = jobs.id) AS k
		WHERE jobs.id = $1 AND jobs.tenant = $2`, id, tenant).Scan(dest...)
	if err != nil {
		return Job{}, nil, interpretError(err)
	}
	j.MaxAge = time.Duration(maxAge) * time.Second
	return j, countsMap(n), nil
}

// sumCounts sums job_chunk_counts' columns in domain.RowStates order.
const sumCounts = `coalesce(sum(pending), 0), coalesce(sum(in_flight), 0), coalesce(sum(retry_wait), 0),
	coalesce(sum(matched), 0), coalesce(sum(no_match), 0), coalesce(sum(failed), 0), coalesce(sum(skipped), 0)`

// countsMap turns counts in domain.RowStates order into a map by state.
func countsMap(n [7]int) map[domain.RowState]int {
	counts := make(map[domain.RowState]int, len(domain.RowStates))
	for i, st := range domain.RowStates {
		counts[st] = n[i]
	}
	return counts
}

// JobCursor is a position in a tenant's job list, newest first.
type JobCursor struct {
	CreatedAt time.Time
	ID        string
}

// ListJobs returns up to limit jobs of a tenant, newest first, after the cursor (nil: from the newest).
func (s *Store) ListJobs(ctx context.Context, tenant string, after *JobCursor, limit int) ([]Job, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
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

// StartJob marks a queued job running (the first claim of one of its rows).
func (s *Store) StartJob(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `UPDATE jobs SET state = 'running', started_at = coalesce(started_at, now()), updated_at = now()
		WHERE id = $1 AND state = 'queued'`, id)
	return interpretError(err)
}

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

// skipCanceledRows is the start of the update that skips rows of a canceled
// job (its FROM and WHERE follow).
const skipCanceledRows = `UPDATE job_rows r SET state = 'skipped', state_reason = 'canceled', finished_at = now(),
	updated_at = now(), next_attempt_at = NULL`

// waitingChunkOfJob1 keeps to the chunks of job $1 with rows pending or
// waiting, from their counts: job_rows has no index on the state
// (migrations/00001_schema.sql).
const waitingChunkOfJob1 = `r.chunk IN (SELECT chunk FROM job_chunk_counts WHERE job_id = $1::uuid AND pending + retry_wait > 0)`

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
	skipCanceledRowsSQL = skipCanceledRows + `
		FROM jobs j
		JOIN job_chunk_counts k ON k.job_id = j.id AND k.pending + k.retry_wait > 0
		WHERE j.state = 'canceled' AND j.finished_at IS NULL
		  AND r.job_id = k.job_id AND r.chunk = k.chunk AND r.state IN ('pending', 'retry_wait')`
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
