package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/watches"
)

// WatchRun is one run of a watch: a job of its inputs.
type WatchRun struct {
	WatchID string
	JobID   string
	Slot    time.Time // the due slot, or when a run now was asked for
	Month   time.Time // the month (UTC) its credits count against
	Budget  int64     // what was left of the month's cap when it started
	Manual  bool
	Rows    int
}

// WatchRunOutcome is what starting a run did: a run, or the month's cap
// reached (no run; the next run is then in the next month).
type WatchRunOutcome struct {
	Watch      Watch
	Run        *WatchRun
	CapReached bool
}

// MonthOf is the first day (UTC) of t's month (watches.MonthOf).
func MonthOf(t time.Time) time.Time { return watches.MonthOf(t) }

// watchMonthUsedSQL is what a watch's runs of a month ($2) took of its cap
// ($1 the watch): a diffed run what its job spent, a run still going the
// most it may spend (its budget, or more if its job's budget was raised).
const watchMonthUsedSQL = `
	SELECT coalesce(sum(CASE WHEN wr.diffed_at IS NOT NULL THEN coalesce(j.credits_spent, wr.credits)
		ELSE greatest(wr.budget, coalesce(j.credits_spent + j.credits_reserved, 0)) END), 0)::bigint
	FROM watch_runs wr LEFT JOIN jobs j ON j.id = wr.job_id
	WHERE wr.watch_id = $1 AND wr.month = $2`

// WatchSpend is what a watch's runs of month spent so far (credits
// settled) and hold (reserved by runs still going).
func (s *Store) WatchSpend(ctx context.Context, watchID string, month time.Time) (spent, reserved int64, err error) {
	err = s.pool.QueryRow(ctx, `
		SELECT coalesce(sum(coalesce(j.credits_spent, wr.credits)), 0)::bigint, coalesce(sum(coalesce(j.credits_reserved, 0)), 0)::bigint
		FROM watch_runs wr LEFT JOIN jobs j ON j.id = wr.job_id
		WHERE wr.watch_id::text = $1 AND wr.month = $2`, watchID, watches.MonthOf(month)).Scan(&spent, &reserved)
	return spent, reserved, interpretError(err)
}

// TenantWatchSpend is what the tenant's watches' runs of month spent.
func (s *Store) TenantWatchSpend(ctx context.Context, tenant string, month time.Time) (int64, error) {
	if err := needTenant(tenant); err != nil {
		return 0, err
	}
	var spent int64
	err := s.pool.QueryRow(ctx, `
		SELECT coalesce(sum(coalesce(j.credits_spent, wr.credits)), 0)::bigint
		FROM watch_runs wr JOIN watches w ON w.id = wr.watch_id LEFT JOIN jobs j ON j.id = wr.job_id
		WHERE w.tenant = $1 AND wr.month = $2`, tenant, watches.MonthOf(month)).Scan(&spent)
	return spent, interpretError(err)
}

// RunNow is a run of a watch asked for now.
type RunNow struct {
	Tenant, ID string
	MaxAge     time.Duration // buy again the answers older than this (0: every row)
	Now        time.Time
	ChunkSize  int
	// Admit, when set, is asked under the watch's lock whether the run may
	// start: an error refuses it, nothing stored. It is asked before the
	// month's cap when a run is going, after it otherwise (a cap reached is
	// said first).
	Admit func(watches.RunFacts) error
}

// RunWatchNow starts a run of a watch of the tenant now (ErrNotFound),
// whatever its state, counted against the month's cap like any run. It
// does not move the next scheduled run.
func (s *Store) RunWatchNow(ctx context.Context, r RunNow) (WatchRunOutcome, error) {
	if err := needTenant(r.Tenant); err != nil {
		return WatchRunOutcome{}, err
	}
	var out WatchRunOutcome
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		w, err := scanWatch(tx.QueryRow(ctx, `SELECT `+watchColumns+` FROM watches w WHERE w.tenant = $1 AND w.id::text = $2 FOR UPDATE`, r.Tenant, r.ID))
		if err != nil {
			return err
		}
		var admit func() error
		if r.Admit != nil {
			f, err := runFacts(ctx, tx, w.ID, r.Now)
			if err != nil {
				return err
			}
			if f.InFlight { // refused before the cap: the run going holds it
				return r.Admit(f)
			}
			admit = func() error { return r.Admit(f) }
		}
		out, err = startWatchRun(ctx, tx, w, r.Now, true, r.MaxAge, r.Now, r.ChunkSize, admit)
		return err
	})
	return out, err
}

// runFacts is what RunNow.Admit is asked with about a watch whose row the
// caller holds: is a run going (its job not finished, its answers not
// compared yet: a run its budget stopped is compared, and ended), when did
// the last run asked for now start.
func runFacts(ctx context.Context, tx pgx.Tx, watchID string, now time.Time) (watches.RunFacts, error) {
	f := watches.RunFacts{Now: now}
	err := tx.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM watch_runs wr JOIN jobs j ON j.id = wr.job_id
				WHERE wr.watch_id = $1 AND wr.diffed_at IS NULL AND j.finished_at IS NULL),
			(SELECT max(created_at) FROM watch_runs WHERE watch_id = $1 AND manual)`, watchID).Scan(&f.InFlight, &f.LastManual)
	return f, interpretError(err)
}

// SweepDueWatches starts the run of every active watch whose next slot is
// due at now (up to limit), in one transaction: each watch's row is taken
// FOR UPDATE SKIP LOCKED (two sweeps at once share the watches out), its
// run inserted for the due slot (UNIQUE (watch_id, slot): never twice), its
// job made and its next slot set, all or nothing. A crash before the commit
// leaves the slots due for the next sweep; a slot overdue by several
// periods is run once.
func (s *Store) SweepDueWatches(ctx context.Context, now time.Time, limit, chunkSize int) ([]WatchRunOutcome, error) {
	var outs []WatchRunOutcome
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		outs = nil
		ids, err := collect[string](ctx, tx, `
			SELECT id::text FROM watches WHERE state = 'active' AND next_run_at <= $1
			ORDER BY next_run_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`, now, limit)
		if err != nil {
			return err
		}
		for _, id := range ids {
			w, err := scanWatch(tx.QueryRow(ctx, `SELECT `+watchColumns+` FROM watches w WHERE w.id = $1`, id))
			if err != nil {
				return err
			}
			out, err := startWatchRun(ctx, tx, w, w.NextRunAt, false, w.Every, now, chunkSize, nil)
			if err != nil {
				return fmt.Errorf("watch %s: %w", id, err)
			}
			outs = append(outs, out)
		}
		return nil
	})
	return outs, err
}

// startWatchRun makes the run of a watch whose row tx holds: a job of its
// inputs with maxAge and a budget of what is left of the month's cap. With
// nothing left, no run: the watch says the cap was reached and, for a
// scheduled run, its next run is in the next month. A scheduled run moves
// the next slot past now. admit (nil: none) may refuse a run the cap allows.
func startWatchRun(ctx context.Context, tx pgx.Tx, w Watch, slot time.Time, manual bool, maxAge time.Duration, now time.Time, chunkSize int,
	admit func() error) (WatchRunOutcome, error) {
	if chunkSize <= 0 {
		return WatchRunOutcome{}, fmt.Errorf("store: chunk size must be positive")
	}
	month := watches.MonthOf(now)
	var used int64
	if err := tx.QueryRow(ctx, watchMonthUsedSQL, w.ID, month).Scan(&used); err != nil {
		return WatchRunOutcome{}, interpretError(err)
	}
	left := watches.Left(w.MonthlyCapCredits, used)
	if left <= 0 {
		next := w.NextRunAt
		if !manual {
			next = watches.NextMonthSlot(w.ID, month)
		}
		nw, err := scanWatch(tx.QueryRow(ctx, `UPDATE watches w SET cap_reached_month = $2, next_run_at = $3, updated_at = $4
			WHERE w.id = $1 RETURNING `+watchColumns, w.ID, month, next, now))
		return WatchRunOutcome{Watch: nw, CapReached: true}, err
	}
	if admit != nil {
		if err := admit(); err != nil {
			return WatchRunOutcome{}, err
		}
	}
	jobID := uuid.NewString()
	var inserted bool
	err := tx.QueryRow(ctx, `
		INSERT INTO watch_runs (watch_id, job_id, slot, month, budget, manual, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (watch_id, slot) DO NOTHING RETURNING true`, w.ID, jobID, slot, month, left, manual, now).Scan(&inserted)
	if err != nil && !errors.Is(interpretError(err), ErrNotFound) {
		return WatchRunOutcome{}, interpretError(err)
	}
	var run *WatchRun
	if inserted {
		rows, err := createWatchJob(ctx, tx, w, jobID, left, maxAge, chunkSize)
		if err != nil {
			return WatchRunOutcome{}, err
		}
		run = &WatchRun{WatchID: w.ID, JobID: jobID, Slot: slot, Month: month, Budget: left, Manual: manual, Rows: rows}
	}
	next := w.NextRunAt
	if !manual {
		next = watches.NextAfterRun(slot, w.Every, now)
	}
	nw, err := scanWatch(tx.QueryRow(ctx, `
		UPDATE watches w SET next_run_at = $2, updated_at = $3,
			cap_reached_month = CASE WHEN cap_reached_month = $4 THEN cap_reached_month END
		WHERE w.id = $1 RETURNING `+watchColumns, w.ID, next, now, month))
	return WatchRunOutcome{Watch: nw, Run: run}, err
}

// createWatchJob stores the job of a run: one row per input of the watch
// (input_row: the input's n), split in chunks the chunk dispatcher hands
// to the queue.
func createWatchJob(ctx context.Context, tx pgx.Tx, w Watch, jobID string, budget int64, maxAge time.Duration, chunkSize int) (int, error) {
	if _, err := exec(ctx, tx, `
		INSERT INTO jobs (id, tenant, name, lookups, budget_credits, max_age_seconds, source_format)
		VALUES ($1, $2, $3, $4, $5, $6, 'watch')`,
		jobID, w.Tenant, "watch "+w.ID, w.Lookups, budget, int64(maxAge/time.Second)); err != nil {
		return 0, err
	}
	rows, err := exec(ctx, tx, `
		INSERT INTO job_rows (job_id, chunk, input_row, ref, input_kind, profile_url, name, company, domain, email, role, found_profile_url)
		SELECT $1, (row_number() OVER (ORDER BY i.n) - 1) / $3, i.n, i.ref, i.input_kind, i.profile_url, i.name, i.company, i.domain,
			i.email, i.role, i.profile_url
		FROM watch_inputs i WHERE i.watch_id = $2`, jobID, w.ID, chunkSize)
	if err != nil {
		return 0, err
	}
	chunks := (int(rows) + chunkSize - 1) / chunkSize
	if _, err := exec(ctx, tx, `UPDATE jobs SET total_rows = $2, chunk_count = $3, distinct_lookups = $2 WHERE id = $1`, jobID, rows, chunks); err != nil {
		return 0, err
	}
	if _, err := exec(ctx, tx, `INSERT INTO job_chunks (job_id, chunk) SELECT $1, generate_series(0, $2 - 1)`, jobID, chunks); err != nil {
		return 0, err
	}
	return int(rows), nil
}
