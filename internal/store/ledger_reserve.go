package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/google/uuid"
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
			"mark": mark}).
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
		FROM enrichq_reserve(@job_id, @row_id, @row_count, @stage, @endpoint, @idempotency_key, @credits, @ttl_ms, @account, @allowance)
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

// Settlement is what a call turned out to cost.
type Settlement struct {
	Charged   int64
	Reported  bool   // the vendor said so (X-Credits-Charged)
	Remaining *int64 // X-Credits-Remaining
	Error     string
	// StageCredits splits a bulk call's charge by stage, by the cost table.
	StageCredits map[domain.Stage]int64
	// ReplayPrice, when set, says the call was answered as a replay of an
	// answer priced at that many credits (ExplainJob reads it).
	ReplayPrice *int64
	// ReplayClass, when set, is the price class of the replayed answer
	// (enrich.PriceClass): ExplainJob prices the billed earlier send by the
	// class's learned price, which may come after the replay. Set without
	// ReplayPrice: a repeat charged 0 whose price was not known yet.
	ReplayClass *string
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
	if st.ReplayPrice != nil || st.ReplayClass != nil {
		if err := s.markReplay(ctx, ledgerID, st.ReplayPrice, st.ReplayClass); err != nil {
			return err
		}
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
// charged nil means "the reservation". It locks the ledger row, then the
// job's, then the account's (Reserve's order), and is run again after a
// conflict or while the database is unavailable, until ctx ends: it is
// idempotent (a reservation already closed is left alone), and a
// settlement that is lost leaves the call counted at its worst case.
func (s *Store) closeReservation(ctx context.Context, id int64, status string, charged *int64, reported bool, remaining *int64, errText string, split any) error {
	return s.retry(ctx, true, func() error {
		_, err := s.pool.Exec(ctx, `SELECT enrichq_close_reservation(@id, @status, @charged, @reported, @remaining, @error, @split::jsonb)`,
			pgx.StrictNamedArgs{"id": id, "status": status, "charged": charged, "reported": reported, "remaining": remaining,
				"error": errText, "split": split})
		return err
	})
}

// ReconcileReplay settles the earlier sends of a call that the vendor has
// answered as a replay (call by, under the same Idempotency-Key, not yet
// settled): one send of the key was billed, and the answers of the earlier
// ones were lost (a killed worker, a timeout, a reset), so they were
// counted at their reservation. When none of them was settled with a
// charge, the oldest still open (unknown or reserved) is settled at credits,
// the cost table's price of the replayed answer, and the others at 0; else
// all of them at 0. When none was billed and none is open, and by itself was
// sent twice (resent: http.Transport's own retry), by's first send is the
// billed one: chargeBy says so, and by is to be settled at credits, else
// at 0. n is how many earlier sends it settled.
func (s *Store) ReconcileReplay(ctx context.Context, jobID, key string, by, credits int64, resent bool) (n int, chargeBy bool, err error) {
	if key == "" {
		return 0, resent, nil
	}
	open, billed, err := s.earlierSends(ctx, jobID, key, by)
	if err != nil {
		return 0, false, err
	}
	first := credits
	if billed {
		first = 0
	}
	n, err = s.settleEarlier(ctx, open, first, fmt.Sprintf("reconciled by call %d: the vendor replayed this Idempotency-Key's answer", by))
	return n, err == nil && !billed && len(open) == 0 && resent, err
}

// ReconcileFresh settles at 0 the earlier sends of a call (by) that the
// vendor answered afresh, not as a replay: with a vendor known to honour
// Idempotency-Key (it replays a key's first answer for 24 h), a fresh answer
// proves that no earlier send of the key was billed (it never arrived, or
// was cut before the work). Those sends were counted at their reservation (unknown,
// or still reserved by a worker that is gone). It returns how many it
// settled.
func (s *Store) ReconcileFresh(ctx context.Context, jobID, key string, by int64) (int, error) {
	if key == "" {
		return 0, nil
	}
	open, _, err := s.earlierSends(ctx, jobID, key, by)
	if err != nil {
		return 0, err
	}
	return s.settleEarlier(ctx, open, 0,
		fmt.Sprintf("reconciled by call %d: the vendor answered this Idempotency-Key afresh, so this send was not billed", by))
}

// earlierSends reads the sends of key in the job before call by, within the
// vendor's 24 h replay window: those still open (unknown or reserved),
// oldest first, and whether one was settled with a charge.
func (s *Store) earlierSends(ctx context.Context, jobID, key string, by int64) (open []int64, billed bool, err error) {
	err = s.retry(ctx, true, func() error {
		return s.pool.QueryRow(ctx, `
		SELECT coalesce(array_agg(id ORDER BY id) FILTER (WHERE status IN ('unknown', 'reserved')), '{}'),
			coalesce(bool_or(status = 'settled' AND charged > 0), false)
		FROM credit_ledger WHERE job_id = $1 AND idempotency_key = $2 AND id < $3
		  AND reserved_at > now() - interval '23 hours'`, jobID, key, by).Scan(&open, &billed)
	})
	return open, billed, err
}

// settleEarlier settles the sends ids, the first at first credits and the
// others at 0, as not reported by the vendor, with reason; it returns how
// many it settled.
func (s *Store) settleEarlier(ctx context.Context, ids []int64, first int64, reason string) (int, error) {
	for i, id := range ids {
		charged := int64(0)
		if i == 0 {
			charged = first
		}
		if err := s.closeReservation(ctx, id, LedgerSettled, &charged, false, nil, reason, nil); err != nil {
			return i, err
		}
	}
	return len(ids), nil
}

// ExpireReservations closes reservations older than their expiry (a worker
// died holding them): one whose call was sent (MarkSent) is counted as spent
// at its worst case, one never sent is released. It returns how many it closed.
func (s *Store) ExpireReservations(ctx context.Context, limit int) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, sent_at IS NOT NULL FROM credit_ledger WHERE status = 'reserved' AND expires_at < now() ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return 0, interpretError(err)
	}
	type open struct {
		id   int64
		sent bool
	}
	var opens []open
	var o open
	if _, err := pgx.ForEachRow(rows, []any{&o.id, &o.sent}, func() error { opens = append(opens, o); return nil }); err != nil {
		return 0, interpretError(err)
	}
	for _, o := range opens {
		if !o.sent {
			err = s.releaseUnsent(ctx, o.id, "reservation expired: the worker holding it was lost before the call left")
		} else {
			err = s.MarkUnknown(ctx, o.id, "reservation expired: the worker holding it was lost")
		}
		if err != nil {
			return 0, err
		}
	}
	return len(opens), nil
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
