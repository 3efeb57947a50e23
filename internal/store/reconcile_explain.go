package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A send explains an earlier send of its Idempotency-Key when the vendor
// answered it: settled, and either without an error or with a charge (an
// answer that was billed but unreadable still shows the vendor did the work).
// An error answer such as 409 "in progress" or a 503 explains nothing.
const explainingSend = `l.job_id = o.job_id AND l.idempotency_key = o.idempotency_key AND l.id > o.id
	AND l.status = 'settled' AND (l.error = '' OR l.charged > 0)`

// explainableReserved is a condition on jobs j: one of its reservations is
// still held although a later send of its key was answered, or although its
// call never left (FinishJobs asks it of jobs whose rows have all ended: no
// worker holds them). The explain step (ExplainJob) closes those; until then
// the job's credits are not final and FinishJobs leaves it running.
const explainableReserved = `SELECT 1 FROM credit_ledger o WHERE o.job_id = j.id AND o.status = 'reserved'
	AND (o.sent_at IS NULL OR EXISTS (SELECT 1 FROM credit_ledger l WHERE ` + explainingSend + `))`

// SentBefore says whether the job sent Idempotency-Key key before ledger call
// by, within the vendor's replay window, in a send the vendor may have done
// the work of: open (reserved or unknown), or answered without an error or
// with a charge. A send that never left (released) or was refused before any
// work (a 503, answered and charged nothing) does not count.
func (s *Store) SentBefore(ctx context.Context, jobID, key string, by int64) (bool, error) {
	if key == "" {
		return false, nil
	}
	var sent bool
	err := s.retry(ctx, true, func() error {
		return s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM credit_ledger WHERE job_id = $1 AND idempotency_key = $2 AND id < $3
			AND (status IN ('reserved', 'unknown') OR (status = 'settled' AND (error = '' OR charged > 0)))
			AND reserved_at > now() - interval '23 hours')`, jobID, key, by).Scan(&sent)
	})
	return sent, interpretError(err)
}

// releaseUnsent releases reservation id if its call was never sent
// (MarkSent): nothing was spent. A call marked sent meanwhile is left alone.
//
// The row is locked, and found unsent, before it is closed: MarkSent waits
// for the lock and then finds the reservation closed, so a call is never
// sent under a released reservation (it would be billed and counted 0).
func (s *Store) releaseUnsent(ctx context.Context, id int64, reason string) error {
	return s.retry(ctx, true, func() error {
		return s.inTx(ctx, func(tx pgx.Tx) error {
			var unsent bool
			err := tx.QueryRow(ctx, `SELECT true FROM credit_ledger WHERE id = $1 AND status = 'reserved' AND sent_at IS NULL FOR UPDATE`, id).Scan(&unsent)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `SELECT enrichq_close_reservation($1, 'released', 0, false, NULL, $2, NULL)`, id, reason)
			return err
		})
	})
}

// markReplay records on ledger call id that it was answered as a replay of
// an answer of class priced at price credits (either may be nil).
func (s *Store) markReplay(ctx context.Context, id int64, price *int64, class *string) error {
	return s.retry(ctx, true, func() error {
		_, err := s.pool.Exec(ctx, `UPDATE credit_ledger SET replay_price = $2, replay_class = $3 WHERE id = $1`, id, price, class)
		return err
	})
}

// Explained is what ExplainJob closed.
type Explained struct {
	// ByReplay: earlier sends settled by a replay of their key (the oldest
	// not yet billed at the replayed answer's price, the others at 0).
	ByReplay int
	// ByFresh: earlier sends settled at 0 by a fresh answer to their key
	// from a vendor known to honour keys.
	ByFresh int
	// Unknown: reservations counted at their worst case now (a fresh answer
	// to their key, from a vendor not known to honour keys, does not tell
	// whether they were billed).
	Unknown int
	// Unsent: reservations released because their call never left (no
	// MarkSent), held by a worker that is gone: another send of their key
	// was answered, or every row of the job has ended.
	Unsent int
	// Unpriced: earlier sends of a replayed answer whose price the vendor
	// has not shown yet, left counted at their worst case.
	Unpriced int
}

// ExplainJob closes the open calls of a job (reserved, or unknown and
// counted at their worst case) that a later answered send of the same
// Idempotency-Key explains. A replay says the key was billed once, at the
// replayed answer's price: price(class) when the vendor has shown its
// class's price (known), else the price recorded with the replay; a replay
// with neither (a repeat charged 0 whose price was not known) waits for
// the price, its earlier sends counted at their worst case meanwhile. A
// fresh answer, when honours says the vendor is known to honour keys, says
// that the earlier sends were not billed. Without it a fresh answer
// explains nothing of the money, and the reservations it follows are
// counted at their worst case at once (MarkUnknown), so that the job's
// credits are final when it ends. honours is asked only when a fresh answer
// is to be weighed; price may be nil.
func (s *Store) ExplainJob(ctx context.Context, jobID string, honours func() bool, price func(class string) (int64, bool)) (Explained, error) {
	var ex Explained
	opens, err := s.explainableCalls(ctx, jobID)
	if err != nil {
		return ex, err
	}
	e := explaining{jobID: jobID, price: price, replays: map[int64]bool{}, honours: honours}
	for _, o := range opens {
		if err := s.explainCall(ctx, &e, o, &ex); err != nil {
			return ex, err
		}
	}
	n, err := s.releaseUnsentOfEndedJob(ctx, jobID)
	ex.Unsent += n
	return ex, err
}

// explainableCall is an open call of a job that a later answered send of
// its key explains: by a replay (replayBy), or by a fresh answer (fresh).
type explainableCall struct {
	id, replayBy int64
	replayPrice  *int64
	replayClass  *string
	status, key  string
	fresh, sent  bool
}

// explainableCalls reads the open calls of a job, within the vendor's
// replay window, that a later answered send of their key explains.
func (s *Store) explainableCalls(ctx context.Context, jobID string) ([]explainableCall, error) {
	var opens []explainableCall
	err := s.retry(ctx, true, func() error {
		rows, err := s.pool.Query(ctx, `
			SELECT o.id, o.status, o.idempotency_key, coalesce(r.id, 0), r.replay_price, r.replay_class,
				EXISTS (SELECT 1 FROM credit_ledger l WHERE `+explainingSend+` AND l.replay_price IS NULL AND l.replay_class IS NULL),
				o.sent_at IS NOT NULL
			FROM credit_ledger o
			LEFT JOIN LATERAL (SELECT l.id, l.replay_price, l.replay_class FROM credit_ledger l WHERE `+explainingSend+`
				AND (l.replay_price IS NOT NULL OR l.replay_class IS NOT NULL)
				ORDER BY l.id DESC LIMIT 1) r ON true
			WHERE o.job_id = $1 AND o.status IN ('reserved', 'unknown') AND o.reserved_at > now() - interval '23 hours'
			ORDER BY o.id`, jobID)
		if err != nil {
			return err
		}
		opens = opens[:0]
		var o explainableCall
		_, err = pgx.ForEachRow(rows, []any{&o.id, &o.status, &o.key, &o.replayBy, &o.replayPrice, &o.replayClass, &o.fresh, &o.sent}, func() error {
			if o.replayBy != 0 || o.fresh {
				opens = append(opens, o)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, interpretError(err)
	}
	return opens, nil
}

// explaining is what ExplainJob carries from one call to the next.
type explaining struct {
	jobID   string
	price   func(class string) (int64, bool)
	replays map[int64]bool // replays whose earlier sends are settled
	honours func() bool
	// honouring is honours' answer, asked once, when first needed.
	honouring *bool
}

func (e *explaining) knownToHonour() bool {
	if e.honouring == nil {
		h := e.honours()
		e.honouring = &h
	}
	return *e.honouring
}

// explainCall closes call o as what explains it says, and counts it in ex.
func (s *Store) explainCall(ctx context.Context, e *explaining, o explainableCall, ex *Explained) error {
	switch {
	case o.status == LedgerReserved && !o.sent:
		if err := s.releaseUnsent(ctx, o.id, "never sent: its worker was lost before the call left, and a later send of its Idempotency-Key was answered"); err != nil {
			return err
		}
		ex.Unsent++
	case o.replayBy != 0:
		if e.replays[o.replayBy] {
			return nil // settled with the replay's other earlier sends
		}
		credits, ok := replayedPrice(o.replayPrice, o.replayClass, e.price)
		if !ok {
			// Not priced yet: counted at its worst case until it is.
			if o.status == LedgerReserved {
				if err := s.MarkUnknown(ctx, o.id, "a later send of this Idempotency-Key was answered charged 0, and the vendor has not shown that answer's price yet: counted at its worst case"); err != nil {
					return err
				}
				ex.Unknown++
			}
			ex.Unpriced++
			return nil
		}
		e.replays[o.replayBy] = true
		n, _, err := s.ReconcileReplay(ctx, e.jobID, o.key, o.replayBy, credits, false)
		ex.ByReplay += n
		if err != nil {
			return err
		}
	case e.knownToHonour():
		charged := int64(0)
		err := s.closeReservation(ctx, o.id, LedgerSettled, &charged, false, nil,
			"explained: a later send of this Idempotency-Key was answered afresh by a vendor known to honour keys, so this send was not billed", nil)
		if err != nil {
			return err
		}
		ex.ByFresh++
	case o.status == LedgerReserved:
		err := s.MarkUnknown(ctx, o.id, "a later send of this Idempotency-Key was answered afresh, but the vendor is not known to honour keys: counted at its worst case")
		if err != nil {
			return err
		}
		ex.Unknown++
	}
	return nil
}

// replayedPrice is what the billed send of a replayed answer cost: its
// class's learned price when known, else the price recorded with the
// replay; ok is false when neither is there.
func replayedPrice(recorded *int64, class *string, price func(string) (int64, bool)) (int64, bool) {
	if class != nil && price != nil {
		if p, known := price(*class); known {
			return p, true
		}
	}
	if recorded != nil {
		return *recorded, true
	}
	return 0, false
}

// releaseUnsentOfEndedJob releases the reservations of a job whose calls
// never left, once every row of the job has ended: no worker holds its rows,
// so none will send them (MarkSent would refuse it). Such a reservation is a
// lost worker's whose rows were retried in other calls (a bulk call's rows
// regrouped under another key).
func (s *Store) releaseUnsentOfEndedJob(ctx context.Context, jobID string) (int, error) {
	var ids []int64
	err := s.retry(ctx, true, func() error {
		return s.pool.QueryRow(ctx, `SELECT coalesce(array_agg(o.id ORDER BY o.id), '{}') FROM credit_ledger o
			WHERE o.job_id = $1 AND o.status = 'reserved' AND o.sent_at IS NULL
			  AND NOT EXISTS (SELECT 1 FROM job_chunk_counts oc WHERE oc.job_id = o.job_id AND oc.pending + oc.in_flight + oc.retry_wait > 0)`,
			jobID).Scan(&ids)
	})
	if err != nil {
		return 0, interpretError(err)
	}
	for i, id := range ids {
		if err := s.releaseUnsent(ctx, id, "never sent: its worker was lost before the call left, and the job's rows ended in other calls"); err != nil {
			return i, err
		}
	}
	return len(ids), nil
}

// Unsettled are a job's credits whose outcome is not known: calls still
// reserved, and calls of unknown outcome counted at their worst case.
type Unsettled struct {
	Calls   int
	Credits int64
	// Held: calls still reserved (a worker is calling, or was lost holding them).
	Held int
	// RetriedAfresh: counted at their worst case; a later send of their key
	// was answered afresh, but the vendor is not known to honour keys.
	RetriedAfresh int
	// NotRetried: counted at their worst case; their answer was lost and their
	// key was not answered since.
	NotRetried int
}

// jobUnsettledSQL counts a finished job's calls not settled, each with
// whether a later send of its key was answered: asked at every status poll
// of a finished job, it reaches them by credit_ledger_job_open, and each
// one's later sends by credit_ledger_job_key.
const jobUnsettledSQL = `
	SELECT count(*), coalesce(sum(CASE WHEN o.status = 'reserved' THEN o.reserved ELSE o.charged END), 0),
		count(*) FILTER (WHERE o.status = 'reserved'),
		count(*) FILTER (WHERE o.status = 'unknown' AND e.answered),
		count(*) FILTER (WHERE o.status = 'unknown' AND NOT e.answered)
	FROM credit_ledger o,
		LATERAL (SELECT EXISTS (SELECT 1 FROM credit_ledger l WHERE ` + explainingSend + `) AS answered) e
	WHERE o.job_id = $1 AND o.status IN ('reserved', 'unknown')`

// JobUnsettled reads a job's unsettled credits.
func (s *Store) JobUnsettled(ctx context.Context, jobID string) (Unsettled, error) {
	var u Unsettled
	err := s.pool.QueryRow(ctx, jobUnsettledSQL, jobID).Scan(&u.Calls, &u.Credits, &u.Held, &u.RetriedAfresh, &u.NotRetried)
	return u, interpretError(err)
}

// Reason says in words why u's credits are not settled; "" when none is.
func (u Unsettled) Reason() string {
	if u.Calls == 0 {
		return ""
	}
	var parts []string
	if u.Held > 0 {
		parts = append(parts, fmt.Sprintf("%d calls still reserved (in flight, or held by a lost worker until their reservation expires)", u.Held))
	}
	if u.RetriedAfresh > 0 {
		parts = append(parts, fmt.Sprintf("%d calls of lost answer counted at their worst case: their retry was answered afresh, but the vendor is not known to honour Idempotency-Key", u.RetriedAfresh))
	}
	if u.NotRetried > 0 {
		parts = append(parts, fmt.Sprintf("%d calls of lost answer counted at their worst case: their Idempotency-Key was not answered again", u.NotRetried))
	}
	return strings.Join(parts, "; ")
}
