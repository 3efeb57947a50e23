package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Ledger statuses.
const (
	LedgerReserved = "reserved" // credits held before a call
	LedgerSettled  = "settled"  // the vendor answered; charged is what it billed
	LedgerReleased = "released" // the call never left: nothing spent
	LedgerUnknown  = "unknown"  // the outcome is unknown: counted as spent (the reservation)
)

// BudgetError says why a reservation did not fit.
type BudgetError struct {
	Scope                           string // "job" or "account" (the vendor key's monthly allowance)
	Budget, Spent, Reserved, Wanted int64
}

func (e *BudgetError) Error() string {
	what := "the job's budget"
	if e.Scope == "account" {
		what = "the vendor key's monthly allowance"
	}
	return fmt.Sprintf("%d spent and %d reserved of %s of %d; the next call needs up to %d",
		e.Spent, e.Reserved, what, e.Budget, e.Wanted)
}

// Unwrap makes errors.Is(err, ErrBudgetExhausted) true.
func (e *BudgetError) Unwrap() error { return ErrBudgetExhausted }

// ErrJobNotRunning: the job is no longer queued or running (paused, canceled, finished).
var ErrJobNotRunning = errors.New("job is not running")

// Reservation asks to hold credits before a vendor call.
type Reservation struct {
	JobID          string
	RowID          *int64 // single lookups
	RowCount       int
	Stage          string // profile, email, phone, bulk
	Endpoint       string
	IdempotencyKey string
	Credits        int64         // worst-case cost of the call
	TTL            time.Duration // after this the scheduler counts the reservation as spent
	// Account is the vendor key's id; its monthly usage is tracked when set.
	Account string
	// Allowance caps the account's credits per calendar month (UTC); nil: no cap.
	Allowance *int64
}

// Reserve holds credits for one call, atomically against the job's budget:
// spent plus reserved never exceeds it, whatever the number of workers.
// It returns the ledger id, a *BudgetError when the call does not fit, or
// ErrJobNotRunning.
func (s *Store) Reserve(ctx context.Context, r Reservation) (int64, error) {
	if r.RowCount <= 0 {
		r.RowCount = 1
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	var account, month any
	if r.Account != "" {
		var m time.Time
		if _, err := tx.Exec(ctx, `INSERT INTO account_usage (account, month) VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date)
			ON CONFLICT DO NOTHING`, r.Account); err != nil {
			return 0, interpretError(err)
		}
		err := tx.QueryRow(ctx, `UPDATE account_usage SET reserved = reserved + $2, updated_at = now()
			WHERE account = $1 AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date
			  AND ($3::bigint IS NULL OR spent + reserved + $2 <= $3)
			RETURNING month`, r.Account, r.Credits, r.Allowance).Scan(&m)
		if errors.Is(err, pgx.ErrNoRows) {
			be := &BudgetError{Scope: "account", Wanted: r.Credits}
			if r.Allowance != nil {
				be.Budget = *r.Allowance
			}
			// On the transaction's own connection: a second one could wait forever on a full pool.
			_ = tx.QueryRow(ctx, `SELECT spent, reserved FROM account_usage WHERE account = $1
				AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date`, r.Account).Scan(&be.Spent, &be.Reserved)
			return 0, be
		}
		if err != nil {
			return 0, interpretError(err)
		}
		account, month = r.Account, m
	}
	var id int64
	err = tx.QueryRow(ctx, `
		WITH j AS (
			UPDATE jobs SET credits_reserved = credits_reserved + $7, updated_at = now()
			WHERE id = $1 AND state IN ('queued', 'running')
			  AND (budget_credits IS NULL OR credits_spent + credits_reserved + $7 <= budget_credits)
			RETURNING id)
		INSERT INTO credit_ledger (job_id, row_id, row_count, stage, endpoint, idempotency_key, reserved, expires_at, account, account_month)
		SELECT j.id, $2, $3, $4, $5, $6, $7, now() + $8 * interval '1 millisecond', $9, $10 FROM j
		RETURNING id`,
		r.JobID, r.RowID, r.RowCount, r.Stage, r.Endpoint, r.IdempotencyKey, r.Credits, r.TTL.Milliseconds(), account, month).Scan(&id)
	if err == nil {
		return id, interpretError(tx.Commit(ctx))
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, interpretError(err)
	}
	_ = tx.Rollback(ctx)
	j, err := s.GetJob(ctx, "", r.JobID)
	if err != nil {
		return 0, err
	}
	if j.State != JobQueued && j.State != JobRunning {
		return 0, fmt.Errorf("%w (%s)", ErrJobNotRunning, j.State)
	}
	be := &BudgetError{Scope: "job", Spent: j.CreditsSpent, Reserved: j.CreditsReserved, Wanted: r.Credits}
	if j.BudgetCredits != nil {
		be.Budget = *j.BudgetCredits
	}
	return 0, be
}

// Available returns how many credits a job may still reserve; ok is false when it has no budget.
func (s *Store) Available(ctx context.Context, jobID string) (credits int64, ok bool, err error) {
	var avail *int64
	err = s.pool.QueryRow(ctx, `SELECT budget_credits - credits_spent - credits_reserved FROM jobs WHERE id = $1`, jobID).Scan(&avail)
	if err != nil {
		return 0, false, interpretError(err)
	}
	if avail == nil {
		return 0, false, nil
	}
	return max(0, *avail), true, nil
}

// Settlement is what a call turned out to cost.
type Settlement struct {
	Charged   int64
	Reported  bool   // the vendor said so (X-Credits-Charged)
	Remaining *int64 // X-Credits-Remaining
	Error     string
	// StageCredits splits a bulk call's charge by stage, by the cost table.
	StageCredits map[string]int64
}

// Settle records the actual charge of a reserved call and moves the job's
// credits from reserved to spent. Settling a reservation the scheduler
// already counted as spent (unknown) corrects the job's spend.
func (s *Store) Settle(ctx context.Context, ledgerID int64, st Settlement) error {
	var split any
	if len(st.StageCredits) > 0 {
		b, err := json.Marshal(st.StageCredits)
		if err != nil {
			return err
		}
		split = string(b)
	}
	return s.closeReservation(ctx, ledgerID, LedgerSettled, &st.Charged, st.Reported, st.Remaining, st.Error, split)
}

// Release records that a reserved call never left: nothing was spent.
func (s *Store) Release(ctx context.Context, ledgerID int64, reason string) error {
	var zero int64
	return s.closeReservation(ctx, ledgerID, LedgerReleased, &zero, false, nil, reason, nil)
}

// MarkUnknown records a call whose outcome is unknown (timeout after send):
// the reservation is counted as spent until the vendor's ledger says otherwise.
func (s *Store) MarkUnknown(ctx context.Context, ledgerID int64, reason string) error {
	return s.closeReservation(ctx, ledgerID, LedgerUnknown, nil, false, nil, reason, nil)
}

// closeReservation moves a ledger row from reserved (or unknown) to status.
// charged nil means "the reservation".
func (s *Store) closeReservation(ctx context.Context, id int64, status string, charged *int64, reported bool, remaining *int64, errText string, split any) error {
	_, err := s.pool.Exec(ctx, `
		WITH old AS (
			SELECT id, job_id, reserved, status, coalesce(charged, 0) AS charged, account, account_month FROM credit_ledger
			WHERE id = $1 AND (status = 'reserved' OR (status = 'unknown' AND $2 = 'settled'))
			FOR UPDATE),
		l AS (
			UPDATE credit_ledger c SET status = $2, charged = coalesce($3, old.reserved), charge_reported = $4,
				credits_remaining = $5, error = $6, settled_at = now(), stage_credits = coalesce($7::jsonb, c.stage_credits)
			FROM old WHERE c.id = old.id
			RETURNING old.job_id, old.reserved, old.status AS old_status, old.charged AS old_charged, c.charged AS new_charged,
				old.account, old.account_month),
		acc AS (
			UPDATE account_usage a SET
				reserved = a.reserved - CASE WHEN l.old_status = 'reserved' THEN l.reserved ELSE 0 END,
				spent = a.spent + l.new_charged - CASE WHEN l.old_status = 'unknown' THEN l.old_charged ELSE 0 END,
				credits_remaining = coalesce($5, a.credits_remaining), updated_at = now()
			FROM l WHERE l.account IS NOT NULL AND a.account = l.account AND a.month = l.account_month)
		UPDATE jobs j SET
			credits_reserved = j.credits_reserved - CASE WHEN l.old_status = 'reserved' THEN l.reserved ELSE 0 END,
			credits_spent = j.credits_spent + l.new_charged - CASE WHEN l.old_status = 'unknown' THEN l.old_charged ELSE 0 END,
			updated_at = now()
		FROM l WHERE j.id = l.job_id`,
		id, status, charged, reported, remaining, errText, split)
	return interpretError(err)
}

// ExpireReservations counts reservations older than their expiry as spent
// (a worker died holding them). It returns how many it closed.
func (s *Store) ExpireReservations(ctx context.Context, limit int) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM credit_ledger WHERE status = 'reserved' AND expires_at < now() ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return 0, interpretError(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, interpretError(err)
	}
	for _, id := range ids {
		if err := s.MarkUnknown(ctx, id, "reservation expired: the worker holding it was lost"); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

// LedgerTotals sums a job's ledger.
type LedgerTotals struct {
	Calls    int
	Reserved int64 // still held
	Charged  int64 // settled and unknown
}

// JobLedger sums the ledger of one job.
func (s *Store) JobLedger(ctx context.Context, jobID string) (LedgerTotals, error) {
	var t LedgerTotals
	err := s.pool.QueryRow(ctx, `SELECT count(*),
			coalesce(sum(reserved) FILTER (WHERE status = 'reserved'), 0),
			coalesce(sum(charged) FILTER (WHERE status IN ('settled', 'unknown')), 0)
		FROM credit_ledger WHERE job_id = $1`, jobID).Scan(&t.Calls, &t.Reserved, &t.Charged)
	return t, interpretError(err)
}
