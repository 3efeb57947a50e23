package store

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

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
	// Disputed, when set, is the charge the vendor claimed outside its
	// contract (below 0, above the most the answer may cost); Charged is
	// then the contract's price, and the line is marked disputed.
	Disputed *int64
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
	if st.Disputed != nil {
		if err := s.MarkDisputed(ctx, ledgerID, *st.Disputed); err != nil {
			return err
		}
	}
	return s.closeReservation(ctx, ledgerID, LedgerSettled, &st.Charged, st.Reported, st.Remaining, st.Error, split)
}

// MarkDisputed keeps on an open ledger line the charge its vendor claimed
// outside the contract, before the line is closed (Settle with Disputed
// does it too).
func (s *Store) MarkDisputed(ctx context.Context, ledgerID, claimed int64) error {
	return s.retry(ctx, true, func() error {
		_, err := s.pool.Exec(ctx, `UPDATE credit_ledger SET disputed_charge = $2 WHERE id = $1 AND status IN ('reserved', 'unknown')`, ledgerID, claimed)
		return err
	})
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
