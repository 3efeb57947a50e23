package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// KeyUsage is a quiet reading of a vendor key's balance (the key-wide usage
// witness, internal/jobs) and the key's calls since the reading before.
type KeyUsage struct {
	// Quiet is false when a call on the key was in flight somewhere (a
	// reservation of it open): nothing was read.
	Quiet bool
	// First: no reading came before this one; Fall and Calls are empty.
	First bool
	// Balance is the reading, in the vendor's credits.
	Balance int64
	// Fall is how far the balance fell since the previous reading, in the
	// vendor's credits.
	Fall int64
	// Calls are the key's calls between the two readings.
	Calls []KeyUsageCall
}

// KeyUsageCall is one call of a key between two quiet readings.
type KeyUsageCall struct {
	ID int64
	// Unknown: of unknown outcome, counted at Charged (its worst case).
	Unknown bool
	// Charged is what the ledger counts it at, in budget units.
	Charged int64
	// Proposed, for an unknown call, is what the first later answered send
	// of its question (same job, same idempotency key) cost, in budget
	// units: the lost send's price if the vendor answers a question the same
	// way twice. Nil: no such send.
	Proposed *int64
}

// ReadKeyUsage takes a quiet reading of account's balance with read: while
// the account's row of this month is locked (no reservation of the key can
// be made or closed) and no reservation of it is open, so that every call
// of the key either ended before the reading or starts after it. It keeps
// the reading, and returns it with the balance's fall since the previous
// one and the key's calls between them: the ledger rows of the key with an
// id above the previous reading's highest id, up to this one's (a
// reservation takes the account's row before its ledger id, so none of the
// key's is pending below it). read runs inside the transaction, holding the
// key's reservations back: it should be one quick call.
func (s *Store) ReadKeyUsage(ctx context.Context, account string, read func(context.Context) (int64, error)) (KeyUsage, error) {
	if account == "" {
		return KeyUsage{}, errors.New("store: ReadKeyUsage: no account")
	}
	var ku KeyUsage
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		ku = KeyUsage{}
		if _, err := tx.Exec(ctx, `INSERT INTO account_usage (account, month) VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date)
			ON CONFLICT DO NOTHING`, account); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM account_usage WHERE account = $1 AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date
			FOR UPDATE`, account); err != nil {
			return err
		}
		// A statement of its own, after the lock: its snapshot sees every
		// reservation committed before the lock was granted.
		var high int64
		if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM credit_ledger WHERE account = $1 AND status = 'reserved'),
			(SELECT coalesce(max(id), 0) FROM credit_ledger)`, account).Scan(&ku.Quiet, &high); err != nil {
			return err
		}
		if !ku.Quiet {
			return nil
		}
		balance, err := read(ctx)
		if err != nil {
			return err
		}
		ku.Balance = balance
		var prevBalance, prevHigh int64
		err = tx.QueryRow(ctx, `SELECT balance, ledger_high FROM key_usage_readings WHERE account = $1`, account).Scan(&prevBalance, &prevHigh)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			ku.First = true
		case err != nil:
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO key_usage_readings (account, balance, ledger_high) VALUES ($1, $2, $3)
			ON CONFLICT (account) DO UPDATE SET balance = excluded.balance, ledger_high = excluded.ledger_high, read_at = now()`,
			account, balance, high); err != nil {
			return err
		}
		if ku.First {
			return nil
		}
		ku.Fall = prevBalance - balance
		rows, err := tx.Query(ctx, `SELECT o.id, o.status = 'unknown', coalesce(o.charged, 0),
				CASE WHEN o.status = 'unknown' THEN (SELECT l.charged FROM credit_ledger l
					WHERE l.job_id = o.job_id AND l.idempotency_key = o.idempotency_key AND l.account = o.account AND l.id > o.id
						AND l.status = 'settled' AND l.error = '' ORDER BY l.id LIMIT 1) END
			FROM credit_ledger o
			WHERE o.account = $1 AND o.id > $2 AND o.id <= $3 AND o.status IN ('settled', 'unknown')
			ORDER BY o.id`, account, prevHigh, high)
		if err != nil {
			return err
		}
		var c KeyUsageCall
		_, err = pgx.ForEachRow(rows, []any{&c.ID, &c.Unknown, &c.Charged, &c.Proposed}, func() error {
			ku.Calls = append(ku.Calls, c)
			return nil
		})
		return err
	})
	if err != nil {
		return KeyUsage{}, interpretError(err)
	}
	return ku, nil
}

// SettleUnknownByUsage settles a call of unknown outcome that its key's
// quiet readings pinned at charged (budget units), marked witnessed, with
// reason as its error text. A call closed meanwhile is left alone.
func (s *Store) SettleUnknownByUsage(ctx context.Context, ledgerID, charged int64, reason string) error {
	return s.retry(ctx, true, func() error {
		return s.inTx(ctx, func(tx pgx.Tx) error {
			var unknown bool
			err := tx.QueryRow(ctx, `SELECT true FROM credit_ledger WHERE id = $1 AND status = 'unknown' FOR UPDATE`, ledgerID).Scan(&unknown)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SELECT enrichq_close_reservation($1, 'settled', $2, false, NULL, $3, NULL)`, ledgerID, charged, reason); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE credit_ledger SET witnessed_at = now() WHERE id = $1`, ledgerID)
			return err
		})
	})
}
