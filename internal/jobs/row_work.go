package jobs

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
	"github.com/enrichq/enrichq/internal/store"
)

// rowWork is a claimed row as it moves through the stages of one run.
type rowWork struct {
	row   store.Row
	done  map[domain.Stage]bool
	found string
	match bool

	// changes since the last save
	out   store.Outcome
	dirty bool
	end   domain.RowState // "" while active; else the state the row leaves in
	// gone: a save did not write the row (its claim lost, the row erased,
	// or its person suppressed): nothing more is done or saved for it.
	gone bool

	// The waterfall's state of the row in this run: its vendor order per
	// stage, the vendors that said no per stage (and the last of them), the
	// vendors whose match filled it (asked once for everything), and the
	// vendors it skipped because they were out of the order.
	order   map[domain.Stage][]*lane
	tried   map[domain.Stage]map[string]bool
	lastNo  map[domain.Stage]string
	filled  map[string]bool
	skipped []string

	// The verify stage's (verify.go): a found email waiting for its
	// verdict, and how many found addresses were rejected as invalid.
	held     *answer
	rejected int
}

// skip records that the row did not ask vendor because it was out of the
// order (out of credits, its key refused); it reports whether that is new.
func (w *rowWork) skip(vendor string) bool {
	if slices.Contains(w.skipped, vendor) {
		return false
	}
	w.skipped = append(w.skipped, vendor)
	return true
}

func newRowWork(r store.Row) *rowWork {
	w := &rowWork{row: r, done: map[domain.Stage]bool{}, found: r.FoundProfileURL, match: r.AnyMatch}
	for _, s := range r.StagesDone {
		w.done[s] = true
	}
	w.out.RowID = r.ID
	return w
}

func (w *rowWork) stagesDone() []domain.Stage {
	var out []domain.Stage
	for _, s := range domain.Stages {
		if w.done[s] {
			out = append(out, s)
		}
	}
	return out
}

func (w *rowWork) rowWithFound() store.Row {
	r := w.row
	r.FoundProfileURL = w.found
	return r
}

// needs reports whether a row still needs stage.
func (c *chunkRun) needs(w *rowWork, stage domain.Stage) bool {
	if w.end != "" || w.gone || w.done[stage] {
		return false
	}
	switch stage {
	case domain.StageProfile:
		return c.want[domain.StageProfile] || (w.found == "" && (c.want[domain.StageEmail] || c.want[domain.StagePhone]))
	default:
		return c.want[stage] && (w.found != "" || w.done[domain.StageProfile] && c.askableWithoutProfile(w, stage))
	}
}

func (c *chunkRun) complete(w *rowWork) bool {
	return w.end == "" && !c.needs(w, domain.StageProfile) && !c.needs(w, domain.StageEmail) && !c.needs(w, domain.StagePhone)
}

// answer is one stage's answer for one input: a hit or a no-match, and
// the vendor that gave it.
type answer struct {
	vendor  string
	profile *enrich.Profile
	email   *enrich.Email
	phones  *enrich.Phones
}

func (a answer) matched(stage domain.Stage) bool {
	switch stage {
	case domain.StageProfile:
		return a.profile != nil
	case domain.StageEmail:
		return a.email != nil
	default:
		return a.phones != nil && len(a.phones.Numbers) > 0
	}
}

// apply records a stage's answer on a row; remember adds it to the cache.
func (c *chunkRun) apply(w *rowWork, stage domain.Stage, a answer, remember bool) {
	if stage == domain.StageEmail && a.matched(stage) && c.verifies() {
		if !c.gateEmail(w, &a, remember) {
			return // held for its verdict, or rejected as invalid
		}
		remember = false // gateEmail did
	}
	w.done[stage] = true
	w.dirty = true
	now := c.p.cfg.Now()
	if w.out.Prov.FetchedAt.IsZero() {
		w.out.Prov = store.Provenance{Source: sourceOf(a.vendor), FetchedAt: now}
	}
	if a.matched(stage) {
		w.match = true
		switch stage {
		case domain.StageProfile:
			w.found = a.profile.ProfileURL
			w.out.Profile = toStoreProfile(a.profile)
		case domain.StageEmail:
			w.out.Email = toStoreEmail(w.found, a.email)
		case domain.StagePhone:
			w.out.Phone = toStorePhone(w.found, a.phones)
		}
	} else {
		w.out.NoMatches = append(w.out.NoMatches, stage)
	}
	if remember {
		c.remember(w, stage, a, now)
	}
}

// sourceOf is a result's source: the vendor that answered.
func sourceOf(vendor string) string {
	if vendor == "" {
		return DefaultVendorName
	}
	return vendor
}

// leave decides the state the row leaves its run in, written by the next
// save. Every end is checked against the row lifecycle when it is saved
// (savedState).
func (w *rowWork) leave(to domain.RowState) {
	w.end = to
	w.dirty = true
}

// decideEnd gives a row its end state once it is complete (matched when
// some stage found something, else no_match), or, on the final save, once
// the run stops before it is done: pending, released without an attempt
// (budget, a paused job, shutdown).
func (c *chunkRun) decideEnd(w *rowWork, final bool) {
	if w.end != "" || w.gone {
		return
	}
	switch {
	case c.complete(w) && w.match:
		w.leave(domain.RowMatched)
	case c.complete(w):
		w.leave(domain.RowNoMatch)
	case final:
		w.leave(domain.RowPending)
	}
}

// savedState is the state a save writes for the row: its end state, or
// in_flight while it has stages to go (the claim kept). A claimed row is
// in_flight, so the end must be a move the row lifecycle allows from there.
func (w *rowWork) savedState() (domain.RowState, error) {
	s := w.end
	if s == "" {
		s = domain.RowInFlight
	}
	if !domain.RowInFlight.CanBecome(s) {
		return "", fmt.Errorf("row %d: a claimed row cannot become %s", w.row.ID, s)
	}
	return s, nil
}

// fail ends a row's run with a failure: a retry later, or failed for good.
// The row says the failure's class (rowError); its detail is logged.
func (c *chunkRun) fail(w *rowWork, err error) {
	class := rowError(err)
	var ve *enrich.Error
	if errors.As(err, &ve) && ve.Class == enrich.ClassPending {
		// The vendor is still at it (a verifier's 202, 222): nothing was
		// billed and nothing failed. The row waits, without an attempt, and
		// the scheduler brings it back; no worker waits for the answer.
		wait := pendingWait
		if ve.RetryAfter > 0 {
			wait = min(ve.RetryAfter, time.Hour)
		}
		w.leave(domain.RowRetryWait)
		w.out.LastError = class
		w.out.NextAttemptAt = c.p.cfg.Now().Add(wait + time.Duration(c.p.cfg.Rand()*float64(time.Second)))
		return
	}
	if errors.As(err, &ve) && !ve.Retryable() {
		w.leave(domain.RowFailed)
		w.out.Reason = class
		w.out.LastError = class
		c.p.log.Warn("row failed", "job_id", c.job.ID, "row_id", w.row.ID, "error_class", class, "err", err)
		return
	}
	var se *storeError
	if errors.As(err, &se) {
		// enrichq's own database failed before the call (unavailable, a
		// conflict that outlived its retries): the vendor was never asked, so
		// this is not one of the row's attempts. It is tried again shortly.
		w.leave(domain.RowRetryWait)
		w.out.LastError = class
		w.out.NextAttemptAt = c.p.cfg.Now().Add(time.Second + time.Duration(c.p.cfg.Rand()*float64(2*time.Second)))
		c.p.log.Debug("row waits: store", "job_id", c.job.ID, "row_id", w.row.ID, "error_class", class, "err", err)
		return
	}
	var notYet *ratelimit.NotYetError
	if errors.As(err, &notYet) {
		// The shared limiter says "not yet" for longer than a task should wait: not a failed attempt.
		w.leave(domain.RowRetryWait)
		w.out.LastError = class
		w.out.NextAttemptAt = c.p.cfg.Now().Add(notYet.RetryIn + time.Duration(c.p.cfg.Rand()*float64(time.Second)))
		return
	}
	attempts := w.row.Attempts + 1
	w.out.FailedAttempt = true
	w.out.LastError = class
	if attempts >= c.p.cfg.MaxAttempts {
		w.leave(domain.RowFailed)
		w.out.Reason = fmt.Sprintf("attempts exhausted (%d): %s", attempts, class)
		c.p.log.Warn("row failed", "job_id", c.job.ID, "row_id", w.row.ID, "attempts", attempts, "error_class", class, "err", err)
		return
	}
	c.p.log.Debug("row attempt failed; retried", "job_id", c.job.ID, "row_id", w.row.ID, "attempts", attempts, "error_class", class, "err", err)
	delay := ratelimit.Backoff(attempts-1, c.p.cfg.RetryBase, c.p.cfg.RetryMax, c.p.cfg.Rand)
	if errors.As(err, &ve) && ve.RetryAfter > delay {
		// Honour Retry-After, clamped so a wild value cannot park a row for days.
		delay = min(ve.RetryAfter, time.Hour) + time.Duration(c.p.cfg.Rand()*float64(c.p.cfg.RetryBase))
	}
	w.leave(domain.RowRetryWait)
	w.out.NextAttemptAt = c.p.cfg.Now().Add(max(delay, 100*time.Millisecond))
}
