package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// storeError is a failure of enrichq's database before a vendor call (the
// credit reservation could not be made): the call was not attempted.
type storeError struct{ err error }

func (e *storeError) Error() string { return "credit reservation: " + e.err.Error() }

func (e *storeError) Unwrap() error { return e.err }

// answered is what a vendor call's answer says of its money.
type answered struct {
	charge enrich.Charge // priced by the processor's book (priced)
	split  map[domain.Stage]int64
	// classes counts the price classes of a bulk call's answered rows (nil
	// when one row's outcome is unknown), to learn prices from its total.
	classes map[enrich.PriceClass]int64
	// bound is the most the vendor's contract lets the call cost, in its
	// credits (enrich.Vendor.MaxCharge of its question, summed over a bulk
	// call's): a charge beyond it is disputed (withinContract).
	bound int64
	// hidden: the answer showed contact data the key's plan hides.
	hidden bool
	// rateLimit is what the answer said of the vendor's rate window.
	rateLimit *enrich.RateLimit
}

// call makes one vendor call under a credit reservation and the rate limit.
// fn does the call and returns its charge. A nil error from call means the
// vendor answered; the caller classifies.
//
// again says that an earlier send of the same Idempotency-Key may exist
// (a row of the call was attempted before): a fresh answer then settles the
// earlier sends at 0, when the vendor is known to honour keys. Earlier sends
// this misses (a lost worker's) are left to the explain step (explain).
func (c *chunkRun) call(ctx context.Context, l *lane, res store.Reservation, again bool, fn func(ctx context.Context) (answered, error)) error {
	if c.p.isDraining() {
		return errDraining
	}
	res.JobID = c.job.ID
	res.TTL = c.p.cfg.Lease + time.Minute
	res.Vendor = l.name
	res.Account = l.Account
	if l.Allowance != nil {
		a := l.units(*l.Allowance) // the account's usage is counted in budget units
		res.Allowance = &a
	}
	c.readBefore(ctx, l)
	id, err := c.reserve(ctx, res)
	if err != nil {
		return err
	}
	if err := c.takeSlot(ctx, l, id); err != nil {
		return err
	}
	t1 := time.Now()
	a, callErr := fn(ctx)
	t2 := time.Now()
	c.nsVendor.Add(int64(t2.Sub(t1)))
	defer func() { c.nsLedger.Add(int64(time.Since(t2))) }()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := c.settleCall(ctx, sctx, l, res, id, again, a, callErr); err != nil {
		c.p.log.Error("ledger update failed", "ledger_id", id, "err", err)
	}
	c.witnessCall(l, id, res, a, callErr)
	return callErr
}

// reserve reserves the call's credits and returns the ledger id. A job out
// of budget or no longer running halts (errStopJob); a failure of the store
// is a *storeError: the call was not attempted.
func (c *chunkRun) reserve(ctx context.Context, res store.Reservation) (int64, error) {
	t0 := time.Now()
	id, err := c.p.store.Reserve(ctx, res)
	c.nsLedger.Add(int64(time.Since(t0)))
	if err != nil {
		if errors.Is(err, store.ErrBudgetExhausted) || errors.Is(err, store.ErrJobNotRunning) {
			c.halt(ctx, err)
			return 0, errStopJob
		}
		return 0, &storeError{err}
	}
	return id, nil
}

// takeSlot waits for the call's rate slot and marks the reservation sent.
// The rate slot comes last, right before the call: only the mark that the
// call leaves (one short statement) sits between the slot and the request,
// so calls reach the vendor evenly spaced. A call waiting for its slot when
// the worker drains gives it up. A call that does not leave has its
// reservation released.
func (c *chunkRun) takeSlot(ctx context.Context, l *lane, id int64) error {
	wctx, cancelWait := context.WithCancel(ctx)
	stopWatch := context.AfterFunc(c.p.draining, cancelWait)
	err := l.Limiter.Wait(wctx)
	stopWatch()
	cancelWait()
	if err == nil && c.p.isDraining() {
		err = errDraining
	}
	if err == nil {
		err = c.markSent(ctx, id)
	}
	if err == nil {
		return nil
	}
	reason := "rate limiter: " + err.Error()
	var se *storeError
	switch {
	case errors.Is(err, errNotSent):
		return err // released already
	case errors.As(err, &se):
		reason = err.Error()
	case c.p.isDraining() && ctx.Err() == nil:
		reason, err = errDraining.Error(), errDraining
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	rerr := c.p.store.Release(rctx, id, reason)
	cancel()
	if rerr != nil {
		c.p.log.Error("ledger update failed", "ledger_id", id, "err", rerr)
	}
	if errors.Is(err, errDraining) || errors.As(err, &se) {
		return err
	}
	return fmt.Errorf("rate limiter: %w", err)
}

// settleCall closes the call's reservation by what the call returned: an
// answer is settled at its charge, a charged error at its charge, an error
// of unknown outcome is marked unknown (counted at its reservation), any
// other vendor error releases it. ctx is the call's, sctx the settling's.
func (c *chunkRun) settleCall(ctx, sctx context.Context, l *lane, res store.Reservation, id int64, again bool, a answered, callErr error) error {
	m := c.p.cfg.Metrics
	var ve *enrich.Error
	switch {
	case callErr == nil:
		return c.settleAnswer(ctx, sctx, l, res, id, again, a)
	case errors.As(callErr, &ve) && ve.Charge != nil:
		c.throttled(ctx, l, ve)
		ch, disputed := c.withinContract(l, id, *ve.Charge, a.bound)
		if disputed != nil && ve.OutcomeUnknown {
			// An unread answer has no price of its own, and its charge is not
			// believed: unknown, at its worst case, until its retry tells.
			if err := c.p.store.MarkDisputed(sctx, id, *disputed); err != nil {
				c.p.log.Error("ledger update failed", "ledger_id", id, "err", err)
			}
			err := c.p.store.MarkUnknown(sctx, id, ve.Error())
			m.VendorCall(res.Endpoint, outcome(ve))
			c.countCredits(res.Stage, res.Credits, nil)
			return err
		}
		st := l.settlement(ch, ve.Error())
		st.Disputed = disputed
		err := c.p.store.Settle(sctx, id, st)
		m.VendorCall(res.Endpoint, outcome(ve))
		c.countCredits(res.Stage, st.Charged, nil)
		return err
	case errors.As(callErr, &ve) && ve.OutcomeUnknown:
		err := c.p.store.MarkUnknown(sctx, id, ve.Error())
		m.VendorCall(res.Endpoint, outcome(ve))
		c.countCredits(res.Stage, res.Credits, nil)
		return err
	case errors.As(callErr, &ve):
		c.throttled(ctx, l, ve)
		err := c.p.store.Release(sctx, id, ve.Error())
		m.VendorCall(res.Endpoint, outcome(ve))
		return err
	default: // canceled or an error before the request left: unknown to be safe
		err := c.p.store.MarkUnknown(sctx, id, callErr.Error())
		m.VendorCall(res.Endpoint, "error")
		c.countCredits(res.Stage, res.Credits, nil)
		return err
	}
}

// settleAnswer settles a call the vendor answered, and learns the price of
// a fresh answer.
func (c *chunkRun) settleAnswer(ctx, sctx context.Context, l *lane, res store.Reservation, id int64, again bool, a answered) error {
	l.Limiter.Succeeded(ctx)
	c.windowSpent(ctx, l, a.rateLimit)
	c.noteKey(sctx, l, a.charge.Overage, a.hidden)
	charge, disputed := c.withinContract(l, id, a.charge, a.bound)
	st := l.settlement(charge, "")
	st.StageCredits = a.split
	st.Disputed = disputed
	st, fresh := c.replayOrFresh(sctx, l, res, id, again, charge, st)
	err := c.p.store.Settle(sctx, id, st)
	if fresh {
		// A fresh answer says what its kind of answer costs.
		if charge.Class.Valid() {
			l.learnPrice(sctx, charge.Class, charge.Credits, id)
		} else if a.classes != nil {
			l.learnBulk(sctx, a.classes, charge.Credits, id)
		}
	}
	c.p.cfg.Metrics.VendorCall(res.Endpoint, "ok")
	c.countCredits(res.Stage, st.Charged, a.split)
	return err
}

// replayOrFresh tells a replay of an earlier send of the call's
// Idempotency-Key (priced as a replay, the earlier send as billed) from a
// fresh answer, which settles earlier sends of unknown outcome at 0 when
// the vendor honours keys. fresh says the answer's charge shows a price.
func (c *chunkRun) replayOrFresh(ctx context.Context, l *lane, res store.Reservation, id int64, again bool, charge enrich.Charge, st store.Settlement) (_ store.Settlement, fresh bool) {
	sent := c.sentBeforeOnce(ctx, res, id)
	switch {
	case l.replays() && c.isReplay(l, charge, sent):
		l.learnHonoursKeys(ctx, id)
		st = c.replayed(ctx, l, res, id, charge, st)
	case l.replays() && charge.Resent && sent():
		// http.Transport wrote it twice, and the key was sent before: the
		// answer held may be a replay of an earlier send (its charge is
		// not known), priced as a replay would be, never twice.
		st = c.replayed(ctx, l, res, id, charge, st)
	case l.replays() && c.unpricedRepeat(l, charge, sent):
		// Charged 0, to a key sent before, for an answer whose price the
		// vendor has not shown (the cost table says 0): a replay, or a
		// free answer. Either way the billed earlier send cost what the
		// class costs; the explain step settles it once that is learned.
		class := charge.Class.String()
		st.ReplayClass = &class
		c.p.log.Info("a repeat charged 0 for an answer not priced yet: its earlier sends stay counted at their reservation until the vendor shows the price",
			"ledger_id", id, "class", class)
	default:
		fresh = charge.Reported && !charge.Resent && !charge.Replayed && (charge.Credits > 0 || !sent())
		if again && !charge.Resent && l.honoursKeys(ctx) {
			if n, rerr := c.p.store.ReconcileFresh(ctx, c.job.ID, res.IdempotencyKey, id); rerr != nil {
				c.p.log.Warn("earlier sends not reconciled; they stay counted at their reservation", "ledger_id", id, "err", rerr)
			} else if n > 0 {
				c.p.log.Info("earlier sends of unknown outcome reconciled by a fresh answer: not billed", "ledger_id", id, "calls", n)
			}
		}
	}
	return st, fresh
}

// errNotSent: the call's reservation was closed before the call left (a
// worker that had lost its rows: the explain step released it as never
// sent). The call is not made; its rows are not charged an attempt.
var errNotSent = errors.New("the reservation was closed before the call left")

// markSent records, right before the request is written, that the call
// leaves (store.MarkSent): a reservation without the mark is known never to
// have been sent, and is released, not counted at its worst case.
func (c *chunkRun) markSent(ctx context.Context, id int64) error {
	ok, err := c.p.store.MarkSent(ctx, id)
	switch {
	case err != nil:
		return &storeError{err}
	case !ok:
		return errNotSent
	}
	return nil
}

// replayed prices a call answered as a replay (free) and the earlier send
// of its Idempotency-Key that was billed for the answer (see
// store.ReconcileReplay), and returns the call's settlement. An unreadable
// replay is not priced: it says nothing of what the answer cost. When the
// earlier sends cannot be read, they stay counted at their worst case and
// the call is settled as a replay (its own first send, when http.Transport
// re-sent it, counted as billed: never under).
func (c *chunkRun) replayed(ctx context.Context, l *lane, res store.Reservation, id int64, charge enrich.Charge, st store.Settlement) store.Settlement {
	charge.Estimate = l.units(charge.Estimate)
	n, self, err := c.p.store.ReconcileReplay(ctx, c.job.ID, res.IdempotencyKey, id, charge.Estimate, charge.Resent)
	switch {
	case err != nil:
		c.p.log.Warn("earlier sends not reconciled; they stay counted at their reservation", "ledger_id", id, "err", err)
		self = charge.Resent
	case n > 0:
		c.p.log.Info("earlier calls of unknown outcome reconciled by a replay", "ledger_id", id, "calls", n, "credits", charge.Estimate)
	}
	st.Charged, st.Reported = 0, !charge.Resent
	if charge.Class.Valid() {
		class := charge.Class.String()
		st.ReplayClass = &class
	}
	if self {
		st.Charged = charge.Estimate // its own first send was the billed one
	} else {
		price := charge.Estimate
		st.ReplayPrice = &price
	}
	return st
}

// isReplay recognises a replay from the contract's own signals: an answer to
// an Idempotency-Key the job sent before, charged 0 (X-Credits-Charged: 0)
// although it is priced above 0 (learned, else the cost table).
// Idempotent-Replayed: true, where a vendor sends it, confirms at once. A
// charge of 0 for an answer priced 0 is unpricedRepeat's, when the price is
// a guess; when the vendor has shown it, the answer is free and tells
// nothing. When the earlier sends cannot be read, the answer is taken as
// fresh: the earlier sends then stay at their worst case (over the bill,
// never under).
func (c *chunkRun) isReplay(_ *lane, charge enrich.Charge, sent func() bool) bool {
	if charge.Replayed {
		return true
	}
	if !charge.Reported || charge.Credits != 0 || charge.Estimate <= 0 || charge.Resent {
		return false
	}
	return sent()
}

// unpricedRepeat is an answer charged 0 to a key sent before, whose class
// the vendor has not priced yet while the cost table prices it 0: a replay
// (the earlier send billed the class's true price) or a free answer (the
// price is 0, the earlier sends not billed), not to be told apart until the
// price is known.
func (c *chunkRun) unpricedRepeat(l *lane, charge enrich.Charge, sent func() bool) bool {
	if !charge.Reported || charge.Credits != 0 || charge.Resent || !charge.Class.Valid() || l.Prices == nil {
		return false
	}
	if _, known := l.Prices.Price(charge.Class); known {
		return false
	}
	return sent()
}

// sentBeforeOnce says, asked once at most, whether the call's
// Idempotency-Key was sent before (store.SentBefore); when that cannot be
// read, no.
func (c *chunkRun) sentBeforeOnce(ctx context.Context, res store.Reservation, id int64) func() bool {
	var once sync.Once
	var sent bool
	return func() bool {
		once.Do(func() { sent = c.sentBefore(ctx, res, id) })
		return sent
	}
}

// sentBefore says whether the call's Idempotency-Key was sent before
// (store.SentBefore); when that cannot be read, no.
func (c *chunkRun) sentBefore(ctx context.Context, res store.Reservation, id int64) bool {
	sent, err := c.p.store.SentBefore(ctx, c.job.ID, res.IdempotencyKey, id)
	if err != nil {
		c.p.log.Warn("earlier sends not readable; the answer is taken as fresh", "ledger_id", id, "err", err)
		return false
	}
	return sent
}

// priced prices a single lookup's answer by the processor's book (the
// client may price by its cost table): Estimate, and Credits when the
// vendor did not report them.
func (c *chunkRun) priced(l *lane, ch enrich.Charge) enrich.Charge {
	if l.Prices == nil || !ch.Class.Valid() {
		return ch
	}
	est, _ := l.Prices.Price(ch.Class)
	if !ch.Reported {
		ch.Credits = est
	}
	ch.Estimate = est
	return ch
}

// countCredits adds a call's charge to the credits metric, a bulk call's by its split.
func (c *chunkRun) countCredits(stage domain.Stage, charged int64, split map[domain.Stage]int64) {
	m := c.p.cfg.Metrics
	if m == nil {
		return
	}
	rest := charged
	for st, n := range split {
		n = min(n, rest)
		rest -= n
		m.Credits(string(st), n)
	}
	m.Credits(string(stage), rest)
}

// outcome is the metric label of a vendor error.
func outcome(ve *enrich.Error) string {
	switch ve.Class {
	case enrich.ClassRateLimited:
		return "rate_limited"
	case enrich.ClassPermanent:
		return "permanent"
	case enrich.ClassUnauthorized:
		return "unauthorized"
	case enrich.ClassForbidden:
		return "forbidden"
	case enrich.ClassOutOfCredits:
		return "out_of_credits"
	case enrich.ClassSuppressed:
		return "suppressed"
	case enrich.ClassPending:
		return "pending"
	default:
		return "transient"
	}
}

// windowSpent pauses every worker on the key until the vendor's fixed
// rate window ends when an answer says the window has no call left (its
// X-RateLimit-Remaining at 0): the next call would only be refused, 429.
// A token bucket's 0 (no Window) refills call by call: the pacing is the
// limiter's.
func (c *chunkRun) windowSpent(ctx context.Context, l *lane, rl *enrich.RateLimit) {
	if rl == nil || rl.Window <= 0 {
		return
	}
	c.aboveLimit(l, rl)
	if rl.Remaining != 0 || rl.ResetIn <= 0 {
		return
	}
	if err := l.Limiter.Throttled(ctx, time.Duration(rl.ResetIn)*time.Second); err != nil {
		c.p.log.Warn("shared cool-down not recorded", "err", err)
	}
}

func (c *chunkRun) throttled(ctx context.Context, l *lane, ve *enrich.Error) {
	if ve.Class == enrich.ClassRateLimited {
		if err := l.Limiter.Throttled(ctx, ve.RetryAfter); err != nil {
			c.p.log.Warn("shared cool-down not recorded", "err", err)
		}
	}
}

// withinContract holds a call's charge to the vendor's contract: a
// charge header outside [0, bound] (a compromised vendor, or someone in the
// middle) is not believed. The call is settled at the price list's price
// for the answer (its Estimate, never above bound), as a charge the vendor
// did not report, so that it teaches no price and moves no budget, no
// allowance and no account past the contract; disputed is what the vendor
// claimed, kept on the ledger line. The one place a charge is bounded.
func (c *chunkRun) withinContract(l *lane, id int64, ch enrich.Charge, bound int64) (_ enrich.Charge, disputed *int64) {
	if !ch.Reported || (ch.Credits >= 0 && ch.Credits <= bound) {
		return ch, nil
	}
	claimed := ch.Credits
	ch.Credits, ch.Reported = min(max(ch.Estimate, 0), bound), false
	c.p.log.Warn("a vendor charged outside its contract: settled at the contract's price, the charge disputed",
		"vendor", l.name, "charged", claimed, "contract_most", bound, "settled", ch.Credits, "ledger_id", id, "job_id", c.job.ID)
	c.p.cfg.Metrics.ChargeDisputed(l.name)
	return ch, &claimed
}

// settlement is a call's charge as the ledger holds it: in budget units,
// the balance reading too (so that the witness compares like with like). A
// reading that does not fit in budget units is dropped.
func (l *lane) settlement(ch enrich.Charge, errText string) store.Settlement {
	s := store.Settlement{Charged: l.units(ch.Credits), Reported: ch.Reported, Error: errText}
	if ch.RemainingReported {
		if r, ok := enrich.BudgetUnits(ch.Remaining, l.CreditValue); ok {
			s.Remaining = &r
		}
	}
	return s
}

// halt stops the run: the rest of the chunk is released, and the job paused
// when the reason calls for it.
func (c *chunkRun) halt(ctx context.Context, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		return
	}
	var be *store.BudgetError
	var ve *enrich.Error
	switch {
	case errors.As(err, &be):
		c.stop = errStopBudget
		switch be.Scope {
		case "account":
			c.pause(ctx, domain.PausedByAllowance, store.BudgetPausePrefix+": "+be.Error()+"; the job resumes on the 1st of next month (UTC), or raise ENRICHQ_VENDOR_MONTHLY_CREDITS and resume it")
		case "tenant":
			c.pause(ctx, domain.PausedByAllowance, store.BudgetPausePrefix+": "+be.Error()+"; the job resumes on the 1st of next month (UTC), or when an admin raises monthly_allowance (PATCH /v1/account)")
		default:
			c.pause(ctx, domain.PausedByJobBudget, store.BudgetPausePrefix+": "+be.Error()+"; raise budget_credits (PATCH /v1/jobs/{id}) to continue")
		}
	case errors.As(err, &ve) && ve.Class == enrich.ClassUnauthorized:
		c.stop = errStopJob
		c.pause(ctx, domain.PausedByVendorAccess, "the vendor refused the API key (401): check ENRICHQ_VENDOR_KEY, then resume the job (POST /v1/jobs/{id}/resume); "+ve.Message)
	case errors.As(err, &ve) && ve.Class == enrich.ClassForbidden:
		c.stop = errStopJob
		c.pause(ctx, domain.PausedByVendorAccess, "the vendor refused access (403 "+ve.Code+"): the plan has no API access; once it has, resume the job (POST /v1/jobs/{id}/resume); "+ve.Message)
	case errors.Is(err, errAllVendorsOut), errors.Is(err, errNoVerifier):
		c.stop = errStopJob
		c.pause(ctx, domain.PausedByVendorAccess, err.Error()+": once one is back (credits bought, its key fixed), resume the job (POST /v1/jobs/{id}/resume)")
	default:
		c.stop = errStopJob
	}
}

func (c *chunkRun) pause(ctx context.Context, cause domain.PauseCause, reason string) {
	paused, err := c.p.store.PauseJob(context.WithoutCancel(ctx), c.job.ID, cause, reason)
	if err != nil {
		c.p.log.Error("pause job failed", "job_id", c.job.ID, "err", err)
		return
	}
	if paused {
		c.p.log.Warn("job paused", "job_id", c.job.ID, "reason", reason)
	}
}

// budgetError describes the job's budget when a call of wanted credits does not fit.
func (c *chunkRun) budgetError(ctx context.Context, wanted int64) *store.BudgetError {
	be := &store.BudgetError{Scope: "job", Wanted: wanted}
	if j, err := c.p.store.JobByID(ctx, c.job.ID); err == nil {
		be.Spent, be.Reserved = j.CreditsSpent, j.CreditsReserved
		if j.BudgetCredits != nil {
			be.Budget = *j.BudgetCredits
		}
	}
	return be
}

// settleRows applies a call's outcome to the rows that share it.
func (c *chunkRun) settleRows(ctx context.Context, l *lane, rows []*rowWork, err error, ok func(w *rowWork, remember bool)) {
	var ve *enrich.Error
	if errors.As(err, &ve) && c.outOfOrder(ve) {
		c.takeOut(ctx, l, ve) // the rows go on with the next vendor
		return
	}
	if errors.As(err, &ve) && (ve.Class == enrich.ClassUnauthorized || ve.Class == enrich.ClassForbidden) {
		c.halt(ctx, err) // the rows are released on save
		return
	}
	c.rowsMu.Lock()
	defer c.rowsMu.Unlock()
	switch {
	case err == nil:
		// Each row remembers the answer: it is cached with the outcome of
		// any of them that is saved (once per key), not lost with one row an
		// erasure removed.
		for _, w := range rows {
			ok(w, true)
		}
	case errors.Is(err, errStopJob) || errors.Is(err, errDraining) || errors.Is(err, errNotSent) || ctx.Err() != nil:
		// not attempted, or shutting down: rows are released on save
	default:
		for _, w := range rows {
			c.fail(w, err)
		}
	}
}
