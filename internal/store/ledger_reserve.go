package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/enrichq/enrichq/internal/domain"
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
	// Scope is "job", "account" (the vendor key's monthly allowance) or
	// "tenant" (the tenant's monthly allowance).
	Scope                           string
	Budget, Spent, Reserved, Wanted int64
}

func (e *BudgetError) Error() string {
	what := "the job's budget"
	switch e.Scope {
	case "account":
		what = "the vendor key's monthly allowance"
	case "tenant":
		what = "the tenant's monthly allowance"
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
	Stage          domain.Stage // a stage, or domain.StageBulk
	Endpoint       string
	IdempotencyKey string
	Credits        int64         // worst-case cost of the call
	TTL            time.Duration // after this the scheduler counts the reservation as spent
	// Account is the vendor key's id; its monthly usage is tracked when set.
	Account string
	// Allowance caps the account's credits per calendar month (UTC); nil: no cap.
	Allowance *int64
	// Vendor is the configured name of the vendor called; "": not recorded.
	Vendor string
	// Chunk is a bulk call's chunk (its rows are the chunk's): an erasure
	// finds the bulk calls of a person's rows by it. nil: a single lookup.
	Chunk *int
}

// Reserve holds credits for one call, atomically against the job's budget:
// spent plus reserved never exceeds it, whatever the number of workers.
// It returns the ledger id, a *BudgetError when the call does not fit, or
// ErrJobNotRunning.
//
// Lock order: every transaction that touches both locks the job's row
// first, then the account's (Reserve, closeReservation); a deadlock between
// two of them is therefore impossible, and a conflict Postgres still
// reports (40P01, 40001) is run again.
func (s *Store) Reserve(ctx context.Context, r Reservation) (int64, error) {
	if r.RowCount <= 0 {
		r.RowCount = 1
	}
	var id int64
	// Not idempotent: a reservation run twice would hold credits twice. A
	// conflict is run again; after a lost answer the outcome is found
	// (retryMarked): a reservation that committed is not made again.
	ids, committed, err := s.retryMarked(ctx, func(mark uuid.UUID) error {
		var err error
		id, err = s.reserve(ctx, r, mark)
		if errors.Is(err, errNoAccountRow) { // a new month by the database's clock: create its row
			s.accounts.Clear()
			return errRunAgain
		}
		return err
	})
	if committed {
		if len(ids) == 1 {
			return ids[0], nil
		}
		// It committed without a ledger row (the budget refused it, or the
		// job had stopped): nothing is held, so asking again is safe.
		return s.Reserve(ctx, r)
	}
	return id, err
}

// errNoAccountRow: the account's row of the current month (by the
// database's clock) does not exist yet.
var errNoAccountRow = errors.New("store: no account_usage row for this month")

func (s *Store) reserve(ctx context.Context, r Reservation, mark uuid.UUID) (int64, error) {
	var account any
	if r.Account != "" {
		account = r.Account
		// The month's row exists once and for all: created here once per
		// account and month per process (the insert would wait for every
		// transaction holding the row: ON CONFLICT checks its latest
		// version). A month the database's clock starts before ours is
		// "no_account_row".
		key := r.Account + "\x00" + time.Now().UTC().Format("2006-01")
		if _, seen := s.accounts.Load(key); !seen {
			if _, err := s.pool.Exec(ctx, `INSERT INTO account_usage (account, month) VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date)
				ON CONFLICT DO NOTHING`, r.Account); err != nil {
				return 0, err
			}
			s.accounts.Store(key, true)
		}
	}
	var (
		outcome                 string
		id                      *int64
		state                   *string
		spent, reserved, budget *int64
	)
	err := s.pool.QueryRow(ctx, reserveSQL,
		pgx.StrictNamedArgs{"job_id": r.JobID, "row_id": r.RowID, "row_count": r.RowCount, "stage": r.Stage, "endpoint": r.Endpoint,
			"idempotency_key": r.IdempotencyKey, "credits": r.Credits, "ttl_ms": r.TTL.Milliseconds(), "account": account, "allowance": r.Allowance,
			"vendor": nullIfEmpty(r.Vendor), "chunk": r.Chunk, "mark": mark}).
		Scan(&outcome, &id, &state, &spent, &reserved, &budget)
	if be := tenantBudgetError(err, r.Credits); be != nil {
		return 0, be
	}
	if err != nil {
		return 0, err
	}
	deref := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	switch outcome {
	case "ok":
		return *id, nil
	case "not_found":
		return 0, ErrNotFound
	case "not_running":
		return 0, fmt.Errorf("%w (%s)", ErrJobNotRunning, *state)
	case "job_budget", "account_budget":
		be := &BudgetError{Scope: "job", Spent: deref(spent), Reserved: deref(reserved), Budget: deref(budget), Wanted: r.Credits}
		if outcome == "account_budget" {
			be.Scope = "account"
		}
		return 0, be
	case "no_account_row":
		return 0, errNoAccountRow
	default:
		return 0, fmt.Errorf("store: enrichq_reserve: outcome %q", outcome)
	}
}

// reserveSQL is one call of enrichq_reserve (the job's row, then the
// account's, then the ledger's, in one round trip) and the mark of its
// commit, naming the ledger row it made (none when it was refused).
var reserveSQL = `WITH r AS MATERIALIZED (
		SELECT outcome, ledger_id, state, spent, reserved, budget
		FROM enrichq_reserve(@job_id, @row_id, @row_count, @stage, @endpoint, @idempotency_key, @credits, @ttl_ms, @account, @allowance, @vendor::text, @chunk::integer)
	), ` + markSQL(`array_remove(ARRAY[(SELECT ledger_id FROM r)], NULL)`) + `
	SELECT outcome, ledger_id, state, spent, reserved, budget FROM r`

// MarkSent records that reserved call id is about to leave, right before its
// request is written. It reports false when the reservation is closed
// already (released as never sent by ExplainJob or ExpireReservations): the
// call must then not be made. A reservation never marked was never sent.
func (s *Store) MarkSent(ctx context.Context, id int64) (bool, error) {
	var n int64
	err := s.retry(ctx, true, func() error {
		tag, err := s.pool.Exec(ctx, `UPDATE credit_ledger SET sent_at = coalesce(sent_at, now()) WHERE id = $1 AND status = 'reserved'`, id)
		n = tag.RowsAffected()
		return err
	})
	return n == 1, interpretError(err)
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

// tenantBudgetError reads the refusal of the tenant's allowance that the
// credit ledger's trigger raises (SQLSTATE EQ001, DETAIL
// "spent,reserved,allowance"); nil for any other error.
func tenantBudgetError(err error, wanted int64) *BudgetError {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "EQ001" {
		return nil
	}
	be := &BudgetError{Scope: "tenant", Wanted: wanted}
	if f := strings.Split(pgErr.Detail, ","); len(f) == 3 {
		be.Spent, _ = strconv.ParseInt(f[0], 10, 64)
		be.Reserved, _ = strconv.ParseInt(f[1], 10, 64)
		be.Budget, _ = strconv.ParseInt(f[2], 10, 64)
	}
	return be
}
