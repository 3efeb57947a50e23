package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// The balance witness closes what inference leaves: a call whose answer was
// lost is settled by inference (the price of its replayed answer, or its
// worst case), and the vendor's X-Credits-Remaining readings of the calls
// around it may pin what it really cost. The vendor's balance only falls
// (charges are never negative), so its readings, ordered by balance, are
// the order in which the vendor billed the calls it answered; the credits
// missing between two consecutive readings were billed to calls whose
// answers enrichq never read. A lost call is billed after every call whose
// answer was read before it left, and, when the vendor honours keys, before
// the next answered send of its own key. Where one lost call alone can
// account for the missing credits between those bounds, and no other lost
// call can have been billed there, the readings pin its charge: it is
// settled to them, and marked witnessed.

// witnessLead is how long before a job's first lost call the witness reads
// the vendor key's calls: a lost call is taken to have been billed, if at
// all, within this long of leaving (the vendor works as requests arrive).
const witnessLead = 10 * time.Minute

// witnessMaxCalls bounds the calls the witness reads (about 100 bytes each).
const witnessMaxCalls = 500_000

// witnessCall is one call of the vendor key, as the witness reads it.
type witnessCall struct {
	id        int64
	job, key  string
	status    string
	sentAt    *time.Time
	settledAt *time.Time
	charged   int64
	reserved  int64
	reported  bool
	remaining *int64
	sameJob   bool
	explains  bool // an answer the vendor did the work of (explainingSend)
}

// Witnessed is what WitnessJob did.
type Witnessed struct {
	// Settled: calls whose inferred charge the readings pinned to another
	// figure, settled to it.
	Settled int
	// Credits is what those settlements moved (new minus old).
	Credits int64
	// Confirmed: calls whose inferred charge the readings pinned to the same figure.
	Confirmed int
	// Beyond: calls the readings pin above their reservation (the most the
	// call could cost by the contract): not believed, left as they were.
	Beyond int
	// Skipped says why the readings could not be used, when they could not.
	Skipped string
}

// WitnessJob sets the vendor's balance readings beside the calls of a job
// whose charge was inferred (settled without X-Credits-Charged, or counted
// at their worst case), once every row of the job has ended, and settles
// those the readings pin exactly. honoursKeys says whether the vendor is
// known to honour Idempotency-Key (only then does a later answer of a key
// bound when its lost send was billed).
func (s *Store) WitnessJob(ctx context.Context, jobID, account string, honoursKeys bool) (Witnessed, error) {
	var w Witnessed
	if account == "" {
		return w, nil
	}
	calls, err := s.witnessCalls(ctx, jobID, account)
	if err != nil || calls == nil {
		return w, err
	}
	if len(calls) > witnessMaxCalls {
		w.Skipped = fmt.Sprintf("more than %d calls of the key since the job's first lost call", witnessMaxCalls)
		return w, nil
	}
	pins, why := pinCharges(calls, honoursKeys)
	if why != "" {
		w.Skipped = why
		return w, nil
	}
	for _, p := range pins {
		if p.charged == p.pinned {
			w.Confirmed++
			continue
		}
		if p.pinned > p.reserved {
			w.Beyond++
			continue
		}
		if err := s.settlePinned(ctx, p); err != nil {
			return w, interpretError(err)
		}
		w.Settled++
		w.Credits += p.pinned - p.charged
	}
	return w, nil
}

// witnessCalls reads the vendor key's calls from witnessLead before the
// job's first lost call on (at most witnessMaxCalls+1), once every row of
// the job has ended: a cheap look at the job's chunks first, then its
// inferred calls. Nil when the job has rows open or no lost call.
func (s *Store) witnessCalls(ctx context.Context, jobID, account string) ([]witnessCall, error) {
	var open bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM job_chunk_counts WHERE job_id = $1 AND pending + in_flight + retry_wait > 0)`,
		jobID).Scan(&open)
	if err != nil || open {
		return nil, interpretError(err)
	}
	var first *time.Time
	err = s.pool.QueryRow(ctx, `SELECT min(sent_at) FROM credit_ledger
		WHERE job_id = $1 AND account = $2 AND sent_at IS NOT NULL AND credits_remaining IS NULL
		  AND status IN ('settled', 'unknown') AND NOT charge_reported AND witnessed_at IS NULL`,
		jobID, account).Scan(&first)
	if err != nil || first == nil {
		return nil, interpretError(err)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, job_id::text, idempotency_key, status, sent_at, settled_at, coalesce(charged, 0), reserved,
			charge_reported, credits_remaining, job_id = $3, status = 'settled' AND (error = '' OR charged > 0)
		FROM credit_ledger WHERE account = $1 AND reserved_at >= $2 AND status <> 'released' ORDER BY id LIMIT $4`,
		account, first.Add(-witnessLead), jobID, witnessMaxCalls+1)
	if err != nil {
		return nil, interpretError(err)
	}
	calls := []witnessCall{}
	var c witnessCall
	_, err = pgx.ForEachRow(rows, []any{&c.id, &c.job, &c.key, &c.status, &c.sentAt, &c.settledAt, &c.charged, &c.reserved, &c.reported, &c.remaining, &c.sameJob, &c.explains}, func() error {
		calls = append(calls, c)
		return nil
	})
	if err != nil {
		return nil, interpretError(err)
	}
	return calls, nil
}

// settlePinned settles call p to the charge the readings pin, and marks it
// witnessed.
func (s *Store) settlePinned(ctx context.Context, p pin) error {
	reason := fmt.Sprintf("settled by the balance witness: the vendor's X-Credits-Remaining readings around this call show %d credits billed to it alone (it was counted %d)", p.pinned, p.charged)
	if p.status == LedgerUnknown {
		err := s.closeReservation(ctx, p.id, LedgerSettled, &p.pinned, false, nil, reason, nil)
		if err != nil {
			return err
		}
		return s.retry(ctx, true, func() error {
			_, err := s.pool.Exec(ctx, `UPDATE credit_ledger SET witnessed_at = now() WHERE id = $1`, p.id)
			return err
		})
	}
	return s.retry(ctx, true, func() error {
		_, err := s.pool.Exec(ctx, `SELECT enrichq_resettle($1, $2, $3)`, p.id, p.pinned, reason)
		return err
	})
}

// pin is one call whose charge the readings pin.
type pin struct {
	id                        int64
	status                    string
	charged, pinned, reserved int64
}

// pinCharges finds, among calls (one vendor key's, in ledger order), the
// calls of the job (sameJob) whose charge was inferred and that the readings
// pin exactly. why, when not "", says why the readings cannot be used.
func pinCharges(calls []witnessCall, honoursKeys bool) (pins []pin, why string) {
	readings, lost, why := sortCalls(calls)
	if why != "" {
		return nil, why
	}
	if len(readings) < 2 {
		return nil, "fewer than two readings"
	}
	pos, gaps, why := billedGaps(readings)
	if why != "" {
		return nil, why
	}
	wins := lostWindows(calls, readings, lost, pos, len(gaps), honoursKeys)
	// Every missing credit must be some lost call's: else calls enrichq does
	// not know of share the key, and the readings prove nothing.
	covered := make([]bool, len(gaps))
	for _, w := range wins {
		for k := w.lo; k <= w.hi; k++ {
			covered[k] = true
		}
	}
	for k, g := range gaps {
		if g > 0 && !covered[k] {
			return nil, "credits billed to calls enrichq has no lost call for (another user of the key?)"
		}
	}
	return alonePins(wins, gaps), ""
}

// sortCalls sorts calls into the readings (calls that carried
// X-Credits-Remaining) and the lost calls (sent, and their charge not
// reported); why, when not "", says why the readings cannot be used.
func sortCalls(calls []witnessCall) (readings, lost []witnessCall, why string) {
	for _, c := range calls {
		switch {
		case c.remaining != nil && !c.reported && c.charged > 0:
			return nil, nil, "a reading without its charge"
		case c.remaining != nil:
			readings = append(readings, c)
		case c.sentAt == nil:
			// never left: nothing billed
		case c.reported && c.charged > 0:
			return nil, nil, "a charge without its reading"
		case c.reported:
			// answered, charged 0
		default:
			lost = append(lost, c)
		}
	}
	return readings, lost, ""
}

// billedGaps puts readings in the vendor's order (by the balance before
// each call, then after) and returns each reading's place in it (by ledger
// id) and the gaps: gaps[k] is what was billed unread between readings k and
// k+1. why, when not "", says why the readings cannot be used.
func billedGaps(readings []witnessCall) (pos map[int64]int, gaps []int64, why string) {
	slices.SortStableFunc(readings, func(a, b witnessCall) int {
		if d := (*b.remaining + b.charged) - (*a.remaining + a.charged); d != 0 {
			return sign(d)
		}
		return sign(*b.remaining - *a.remaining)
	})
	pos = make(map[int64]int, len(readings))
	gaps = make([]int64, len(readings)-1)
	for k, r := range readings {
		pos[r.id] = k
		if k == 0 {
			continue
		}
		g := *readings[k-1].remaining - (*r.remaining + r.charged)
		if g < 0 {
			return nil, nil, "the readings rise (a top-up, or a reading out of step)"
		}
		gaps[k-1] = g
	}
	return pos, gaps, ""
}

// witnessWindow is the gaps lo..hi in which a lost call may have been billed.
type witnessWindow struct {
	lo, hi int
	// bounded: by a reading answered before the call left, and by a later
	// answered send of its key.
	bounded bool
	call    witnessCall
}

// lostWindows is each lost call's window of gaps: after the last reading
// answered before it left, before the next answered send of its key (known
// only when the vendor honours keys).
func lostWindows(calls, readings, lost []witnessCall, pos map[int64]int, gaps int, honoursKeys bool) []witnessWindow {
	var wins []witnessWindow
	for _, l := range lost {
		w := witnessWindow{lo: -1, hi: gaps - 1, call: l}
		for _, r := range readings {
			if r.settledAt != nil && r.settledAt.Before(*l.sentAt) {
				w.lo = max(w.lo, pos[r.id])
			}
		}
		if w.lo >= gaps {
			continue // sent after the last reading: no gap of these readings holds its charge
		}
		upper := false
		if honoursKeys {
			for _, r := range calls {
				if r.id > l.id && r.job == l.job && r.key == l.key && r.remaining != nil && r.explains {
					w.hi, upper = pos[r.id]-1, true
					break
				}
			}
		}
		w.bounded = w.lo >= 0 && upper && w.lo <= w.hi
		w.lo = max(w.lo, 0)
		w.hi = max(w.hi, w.lo)
		wins = append(wins, w)
	}
	return wins
}

// alonePins pins the charge of each bounded lost call of the job alone in its
// window (no other lost call's window meets it) to the gaps of its window.
func alonePins(wins []witnessWindow, gaps []int64) []pin {
	var pins []pin
	for i, w := range wins {
		if !w.bounded || !w.call.sameJob || w.call.status == LedgerReserved {
			continue
		}
		alone := true
		for j, o := range wins {
			if i != j && o.lo <= w.hi && w.lo <= o.hi {
				alone = false
				break
			}
		}
		if !alone {
			continue
		}
		var sum int64
		for k := w.lo; k <= w.hi; k++ {
			sum += gaps[k]
		}
		pins = append(pins, pin{id: w.call.id, status: w.call.status, charged: w.call.charged, pinned: sum, reserved: w.call.reserved})
	}
	return pins
}

func sign(d int64) int {
	switch {
	case d < 0:
		return -1
	case d > 0:
		return 1
	}
	return 0
}
