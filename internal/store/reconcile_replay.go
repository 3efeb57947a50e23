package store

import (
	"context"
	"fmt"
)

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
