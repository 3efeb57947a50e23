package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/watches"
)

// Kinds of change lines and the webhook event (the rules are
// internal/watches').
const (
	ChangeChanged         = watches.ChangeChanged
	ChangeLeft            = watches.ChangeLeft
	ChangeNotFoundAnyMore = watches.ChangeNotFoundAnyMore
	EventPersonChanged    = watches.EventPersonChanged
)

// WatchDiff is what comparing one run's answers with the snapshots found.
type WatchDiff struct {
	WatchID        string
	JobID          string
	Changes        int
	CompanyChanges int
	CapReached     bool
}

// diffCandidatesSQL is the runs whose job ended, or stopped at its budget
// (the month's cap) with nothing in flight any more (its last answers
// saved and settled), and whose answers were not compared yet.
const diffCandidatesSQL = `
	SELECT wr.job_id::text FROM watch_runs wr LEFT JOIN jobs j ON j.id = wr.job_id
	WHERE wr.diffed_at IS NULL AND (j.id IS NULL OR j.finished_at IS NOT NULL
		OR (j.state = 'paused' AND j.paused_by = 'job_budget' AND j.credits_reserved = 0
			AND NOT EXISTS (SELECT 1 FROM job_chunk_counts k WHERE k.job_id = j.id AND k.in_flight > 0)))
	ORDER BY wr.created_at LIMIT $1`

// DiffWatchRuns compares the answers of up to limit ended runs with their
// watches' snapshots: each difference is a change line and a feed line of
// kind changed, the snapshots take the new answers (a no-match keeps what
// was known), and a run that found company changes queues its watch's
// person.changed webhook. Each run is compared once, in a transaction of
// its own that marks it (a run another sweep holds is skipped).
func (s *Store) DiffWatchRuns(ctx context.Context, now time.Time, limit int) ([]WatchDiff, error) {
	rows, err := s.pool.Query(ctx, diffCandidatesSQL, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	jobs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, interpretError(err)
	}
	var out []WatchDiff
	for _, job := range jobs {
		var d *WatchDiff
		err := s.retry(ctx, false, func() error {
			return s.inTx(ctx, func(tx pgx.Tx) error {
				var err error
				d, err = diffWatchRun(ctx, tx, job, now)
				return err
			})
		})
		if err != nil {
			return out, err
		}
		if d != nil {
			out = append(out, *d)
		}
	}
	return out, nil
}

type changeLine struct {
	n                     int
	ref, field, old, new_ string
	kind, vendor          string
	rowID                 int64
}

// watchRun is a run being compared, with what of its watch the comparison needs.
type watchRun struct {
	jobID, watchID, tenant, callback string
	lookups                          []domain.Stage
	month                            time.Time
}

// answerPair is one input's snapshot beside the run's answer for it, with
// where the answer is stored.
type answerPair struct {
	watches.Answer
	n      int
	ref    string
	rowID  int64
	vendor string
	found  *string
}

// diffWatchRun compares one run (its job, jobID); nil when another sweep
// took it or it was compared already.
func diffWatchRun(ctx context.Context, tx pgx.Tx, jobID string, now time.Time) (*WatchDiff, error) {
	run, err := lockWatchRun(ctx, tx, jobID)
	if run == nil || err != nil {
		return nil, err
	}
	pairs, err := readRunAnswers(ctx, tx, run)
	if err != nil {
		return nil, err
	}
	fields := watches.Fields(run.lookups)
	var lines []changeLine
	snaps := make([]watches.Snapshot, len(pairs))
	for i, p := range pairs {
		var changes []watches.Change
		snaps[i], changes = watches.Compare(p.Answer, fields)
		for _, c := range changes {
			lines = append(lines, changeLine{n: p.n, ref: p.ref, field: c.Field, old: c.Old, new_: c.New, kind: c.Kind, vendor: p.vendor, rowID: p.rowID})
		}
	}
	if err := updateSnapshots(ctx, tx, run, pairs, snaps, now); err != nil {
		return nil, err
	}
	d := &WatchDiff{WatchID: run.watchID, JobID: jobID}
	if len(lines) > 0 {
		if err := insertChangeLines(ctx, tx, run.tenant, run.watchID, jobID, run.lookups, lines, now, d); err != nil {
			return nil, err
		}
	}
	if d.CompanyChanges > 0 && run.callback != "" {
		if _, err := exec(ctx, tx, `INSERT INTO webhook_deliveries (job_id, event, url) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			jobID, EventPersonChanged, run.callback); err != nil {
			return nil, err
		}
	}
	if err := markRunCompared(ctx, tx, run, now, d); err != nil {
		return nil, err
	}
	return d, nil
}

// lockWatchRun locks the run of job jobID for comparing; nil when another
// sweep holds it, it was compared already or its watch is gone. Its watch
// is locked first, as a delete, an update or a run of the watch locks it:
// taken after the run and the snapshots, the change lines' foreign key
// would wait on a delete waiting on the snapshots, a deadlock.
func lockWatchRun(ctx context.Context, tx pgx.Tx, jobID string) (*watchRun, error) {
	run := &watchRun{jobID: jobID}
	err := tx.QueryRow(ctx, `
		SELECT w.id::text FROM watches w
		WHERE w.id = (SELECT wr.watch_id FROM watch_runs wr WHERE wr.job_id = $1 AND wr.diffed_at IS NULL)
		FOR NO KEY UPDATE`, jobID).Scan(&run.watchID)
	if err == nil {
		err = tx.QueryRow(ctx, `
			SELECT w.tenant, w.lookups, coalesce(w.callback_url, ''), wr.month
			FROM watch_runs wr JOIN watches w ON w.id = wr.watch_id
			WHERE wr.job_id = $1 AND wr.diffed_at IS NULL FOR UPDATE OF wr SKIP LOCKED`, jobID).Scan(&run.tenant, &run.lookups, &run.callback, &run.month)
	}
	if errors.Is(interpretError(err), ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, interpretError(err)
	}
	return run, nil
}

// readRunAnswers pairs each input the run answered (matched or no match)
// with its snapshot, in input order.
func readRunAnswers(ctx context.Context, tx pgx.Tx, run *watchRun) ([]answerPair, error) {
	rows, err := tx.Query(ctx, `
		SELECT i.n, i.ref, i.matched, coalesce(i.snap_company, ''), coalesce(i.snap_role, ''), coalesce(i.snap_email, ''),
			coalesce(i.snap_phones, ''), coalesce(i.snap_location, ''),
			r.id, r.state = 'matched', p.row_id IS NOT NULL, coalesce(p.company, ''), coalesce(p.role, ''), coalesce(e.email, ''),
			coalesce((SELECT string_agg(x->>'number', ',' ORDER BY x->>'number') FROM jsonb_array_elements(ph.phones) x), ''),
			coalesce(p.location, ''), coalesce(p.source, e.source, ph.source, (SELECT nm.source FROM no_matches nm WHERE nm.row_id = r.id LIMIT 1), ''),
			r.found_profile_url
		FROM watch_inputs i
		JOIN job_rows r ON r.job_id = $2 AND r.input_row = i.n
		LEFT JOIN profile_results p ON p.row_id = r.id
		LEFT JOIN email_results e ON e.row_id = r.id
		LEFT JOIN phone_results ph ON ph.row_id = r.id
		WHERE i.watch_id = $1 AND r.state IN ('matched', 'no_match')
		ORDER BY i.n`, run.watchID, run.jobID)
	if err != nil {
		return nil, interpretError(err)
	}
	var pairs []answerPair
	for rows.Next() {
		var p answerPair
		var matched bool
		if err := rows.Scan(&p.n, &p.ref, &p.Old.Matched, &p.Old.Company, &p.Old.Role, &p.Old.Email, &p.Old.Phones, &p.Old.Location,
			&p.rowID, &matched, &p.Profiled, &p.New.Company, &p.New.Role, &p.New.Email, &p.New.Phones, &p.New.Location,
			&p.vendor, &p.found); err != nil {
			rows.Close()
			return nil, interpretError(err)
		}
		p.New.Matched = &matched
		pairs = append(pairs, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	return pairs, nil
}

// updateSnapshots writes each answered input's next snapshot, snaps[i] of pairs[i].
func updateSnapshots(ctx context.Context, tx pgx.Tx, run *watchRun, pairs []answerPair, snaps []watches.Snapshot, now time.Time) error {
	if len(pairs) == 0 {
		return nil
	}
	batch := &pgx.Batch{}
	for i, p := range pairs {
		snap := snaps[i]
		batch.Queue(`UPDATE watch_inputs SET matched = $3, snap_company = nullif($4, ''), snap_role = nullif($5, ''), snap_email = nullif($6, ''),
			snap_phones = nullif($7, ''), snap_location = nullif($8, ''), found_profile_url = coalesce($9, found_profile_url), answered_at = $10
			WHERE watch_id = $1 AND n = $2`,
			run.watchID, p.n, snap.Matched, snap.Company, snap.Role, snap.Email, snap.Phones, snap.Location, p.found, now)
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return interpretError(err)
	}
	return nil
}

// markRunCompared marks the run compared with the credits its job spent;
// a run its job's budget stopped marks its watch capped for the month and
// moves the next run to the next month's slot.
func markRunCompared(ctx context.Context, tx pgx.Tx, run *watchRun, now time.Time, d *WatchDiff) error {
	var capped bool
	var spent *int64
	err := tx.QueryRow(ctx, `SELECT j.credits_spent, j.state = 'paused' AND j.paused_by = 'job_budget' FROM jobs j WHERE j.id = $1`, run.jobID).Scan(&spent, &capped)
	if err != nil && !errors.Is(interpretError(err), ErrNotFound) {
		return interpretError(err)
	}
	if _, err := exec(ctx, tx, `UPDATE watch_runs SET diffed_at = $2, credits = coalesce($3, credits) WHERE job_id = $1`, run.jobID, now, spent); err != nil {
		return err
	}
	if capped {
		d.CapReached = true
		if _, err := exec(ctx, tx, `UPDATE watches SET cap_reached_month = $2, updated_at = $4,
				next_run_at = greatest(next_run_at, $3::timestamptz) WHERE id = $1`,
			run.watchID, run.month, watches.NextMonthSlot(run.watchID, run.month), now); err != nil {
			return err
		}
	}
	return nil
}

// insertChangeLines writes a run's change lines (once: a line of the same
// job, input and field is not written again) and their feed lines, under
// the feed's turn (as an erasure's deleted lines are: positions are handed
// out one writer at a time, committed in order).
func insertChangeLines(ctx context.Context, tx pgx.Tx, tenant, watchID, jobID string, lookups []domain.Stage, lines []changeLine, now time.Time, d *WatchDiff) error {
	if _, err := tx.Exec(ctx, `SELECT 1 FROM results_feed_cursor WHERE singleton FOR UPDATE`); err != nil {
		return interpretError(err)
	}
	batch := &pgx.Batch{}
	for _, l := range lines {
		stage := watches.ChangeStage(l.field, lookups)
		batch.Queue(`
			WITH c AS (
				INSERT INTO watch_changes (tenant, watch_id, n, ref, field, old, new, kind, vendor, job_id, row_id, at)
				VALUES ($1, $2, $3, $4, $5, nullif($6, ''), nullif($7, ''), $8, $9, $10, $11, $12)
				ON CONFLICT (job_id, n, field) DO NOTHING RETURNING id)
			INSERT INTO results_feed_log (tenant, job_id, row_id, kind, stage, source_seq)
			SELECT $1, $10, $11, 'changed', $13, c.id FROM c`,
			tenant, watchID, l.n, l.ref, l.field, l.old, l.new_, l.kind, l.vendor, jobID, l.rowID, now, stage)
	}
	br := tx.SendBatch(ctx, batch)
	for _, l := range lines {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return interpretError(err)
		}
		if tag.RowsAffected() > 0 {
			d.Changes++
			if l.field == "company" {
				d.CompanyChanges++
			}
		}
	}
	return interpretError(br.Close())
}
