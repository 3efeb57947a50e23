package store

import "context"

// SettleByUsage settles a call its vendor's usage counters pinned (the
// worker's usage witness, internal/jobs): a call of unknown outcome is
// settled at charged, a settled call (its answer's charge counted a lost
// earlier send at its worst) is settled again at charged; either is marked
// witnessed, with reason as its error text.
func (s *Store) SettleByUsage(ctx context.Context, ledgerID, charged int64, reason string) error {
	var resettled bool
	err := s.retry(ctx, true, func() error {
		return s.pool.QueryRow(ctx, `SELECT enrichq_resettle($1, $2, $3)`, ledgerID, charged, reason).Scan(&resettled)
	})
	if err != nil || resettled {
		return interpretError(err)
	}
	if err := s.closeReservation(ctx, ledgerID, LedgerSettled, &charged, false, nil, reason, nil); err != nil {
		return err
	}
	return s.retry(ctx, true, func() error {
		_, err := s.pool.Exec(ctx, `UPDATE credit_ledger SET witnessed_at = now() WHERE id = $1`, ledgerID)
		return err
	})
}
