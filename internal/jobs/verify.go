package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// The verify stage. With `verify` in a job's lookups, every email the job
// delivers, whoever found it, carries a verifier's verdict (Email.Status),
// and an invalid address is not delivered: the email stage takes a found
// address only with a verdict that is not invalid, else the waterfall goes
// on to the next finder. It is not a stage of its own in the row's pipeline
// (domain.Stages) because it gates the email stage's answer: a found
// address is held (rowWork.held) until its verdict is known (verifyHeld,
// after each round of the waterfall and after the cache), then applied or
// rejected.
//
// A verdict is bought once per address and kept: in the run (verdicts, so a
// later finder's same address is known at once), and in lookup_cache under
// stage verify, key "email:<address>" (the erasure's key of a found email),
// honoured within the job's max_age; a catch-all verdict is kept for its
// domain too ("domain:<host>"), whose every address would be accept_all.
// A verifier's "ask again later" (enrich.ClassPending) parks the row in
// retry_wait without an attempt (fail): the scheduler brings the chunk
// back, no worker waits, and the address the finder sold comes back from
// the cache.

// pendingWait is how long a row waits for a verdict the verifier is still
// working on, when it did not say.
const pendingWait = 30 * time.Second

// cachedVerdict is a verdict as lookup_cache.result keeps it.
type cachedVerdict struct {
	Status enrich.EmailStatus `json:"status"`
	Vendor string             `json:"vendor,omitempty"`
}

// verdictBook is a run's verdicts: by address, and the catch-all domains.
type verdictBook struct {
	mu       sync.Mutex
	byAddr   map[string]enrich.EmailStatus
	catchAll map[string]bool
}

func (b *verdictBook) get(addr string) (enrich.EmailStatus, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.byAddr[addr]; ok {
		return s, true
	}
	if b.catchAll[domainOf(addr)] {
		return enrich.StatusAcceptAll, true
	}
	return "", false
}

func (b *verdictBook) set(addr string, s enrich.EmailStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byAddr == nil {
		b.byAddr, b.catchAll = map[string]enrich.EmailStatus{}, map[string]bool{}
	}
	b.byAddr[addr] = s
	if s == enrich.StatusAcceptAll {
		b.catchAll[domainOf(addr)] = true
	}
}

// normAddr is an address as verdicts are kept by.
func normAddr(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// domainOf is an address's domain ("" without one).
func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[i+1:]
	}
	return ""
}

// validStatus says whether s is one of the verdicts.
func validStatus(s enrich.EmailStatus) bool {
	switch s {
	case enrich.StatusValid, enrich.StatusInvalid, enrich.StatusAcceptAll, enrich.StatusWebmail, enrich.StatusDisposable, enrich.StatusUnknown:
		return true
	}
	return false
}

// verifies says whether the job asks its emails verified.
func (c *chunkRun) verifies() bool { return c.want[domain.StageVerify] }

// gateEmail is apply's gate of a found email when the job verifies: it
// reports whether the email may be applied now (a verdict known, not
// invalid: a.email then carries it). Otherwise the address is rejected
// (known invalid: the finder's answer counts as its no) or held for its
// verdict. The finder's answer is remembered either way: it was paid for.
// Called with rowsMu held, or by the run alone.
func (c *chunkRun) gateEmail(w *rowWork, a *answer, remember bool) bool {
	if remember {
		c.remember(w, domain.StageEmail, *a, c.p.cfg.Now())
	}
	status := a.email.Status
	if !validStatus(status) {
		var ok bool
		if status, ok = c.verdicts.get(normAddr(a.email.Address)); !ok {
			held := *a
			w.held = &held
			return false
		}
	} else {
		// The finder sold its own verdict with the address.
		c.verdicts.set(normAddr(a.email.Address), status)
	}
	if status == enrich.StatusInvalid {
		c.rejectEmail(w, a.vendor)
		return false
	}
	e := *a.email
	e.Status = status
	a.email = &e
	return true
}

// rejectEmail turns a finder's invalid address into its no for the row: the
// waterfall asks the next finder; with none left the row has no email.
func (c *chunkRun) rejectEmail(w *rowWork, vendor string) {
	w.saidNo(domain.StageEmail, sourceOf(vendor))
	w.rejected++
	c.unobserveEmail(w.row.ID, vendor)
	if w.out.Profile == nil && w.out.Phone == nil && len(w.out.NoMatches) == 0 {
		w.out.Prov = store.Provenance{} // the next finder's answer names its own source
	}
}

// verifyHeld settles the held emails of rows: by the run's verdicts, then
// the cache's, then a verifier's answer, one call per address; each is
// applied with its verdict or rejected. Rows a verifier cannot answer yet
// stay held, or leave the run (fail: retried later, pending without an
// attempt).
func (c *chunkRun) verifyHeld(ctx context.Context, rows []*rowWork) {
	if !c.verifies() {
		return
	}
	c.verdictsFromCache(ctx, c.heldRows(rows))
	c.decideHeld(c.heldRows(rows))
	c.claimVerdicts(ctx, c.heldRows(rows))
	for !c.stopped() && ctx.Err() == nil && !c.p.isDraining() {
		held := c.heldRows(rows)
		if len(held) == 0 {
			return
		}
		l := c.verifier()
		if l == nil {
			c.halt(ctx, errNoVerifier)
			return
		}
		c.perInput(ctx, held, func(w *rowWork) string { return normAddr(w.held.email.Address) },
			func(addr string, group []*rowWork) { c.buyVerdict(ctx, l, addr, group) })
		c.decideHeld(c.heldRows(rows))
		if !c.isOut(l.name) {
			return // the rows still held failed (retried later) or wait
		}
	}
}

// claimVerdicts makes concurrent runs share one verification per address,
// as claimLookups does for the other stages: an address another run is
// verifying right now is not bought here; its rows leave the run and come
// back shortly, when that run's verdict is in the cache (the address the
// finder sold them with it). Without reuse (max_age 0) each run verifies
// its own.
func (c *chunkRun) claimVerdicts(ctx context.Context, held []*rowWork) {
	if c.job.MaxAge <= 0 || len(held) == 0 {
		return
	}
	mine, ok := c.claimKeys(ctx, domain.StageVerify, held, func(w *rowWork) string { return verdictKey(normAddr(w.held.email.Address)) },
		"waiting for another worker's verification of the same address")
	if !ok {
		return
	}
	// A verdict saved between our cache check and our claim is used now.
	c.verdictsFromCache(ctx, mine)
	c.decideHeld(mine)
}

// errNoVerifier halts a job asking verify when no vendor that sells
// verification is left (none configured, or every one out of the order).
var errNoVerifier = errors.New("no vendor left to verify the emails found (verify asked)")

// heldRows are the rows with an email waiting for its verdict.
func (c *chunkRun) heldRows(rows []*rowWork) []*rowWork {
	c.rowsMu.Lock()
	defer c.rowsMu.Unlock()
	var out []*rowWork
	for _, w := range rows {
		if w.held != nil && w.end == "" && !w.gone {
			out = append(out, w)
		}
	}
	return out
}

// decideHeld applies or rejects the held emails whose verdict is known.
func (c *chunkRun) decideHeld(rows []*rowWork) {
	c.rowsMu.Lock()
	defer c.rowsMu.Unlock()
	for _, w := range rows {
		if w.held == nil {
			continue
		}
		s, ok := c.verdicts.get(normAddr(w.held.email.Address))
		if !ok {
			continue
		}
		a := *w.held
		w.held = nil
		e := *a.email
		e.Status = s
		a.email = &e
		c.apply(w, domain.StageEmail, a, false) // gateEmail rejects it when invalid
	}
}

// verdictsFromCache adds the cached verdicts of the held addresses (and of
// their domains' catch-alls) to the run's, within the job's max_age.
func (c *chunkRun) verdictsFromCache(ctx context.Context, rows []*rowWork) {
	if c.job.MaxAge <= 0 || len(rows) == 0 {
		return
	}
	seen := map[string]bool{}
	var keys []string
	for _, w := range rows {
		addr := normAddr(w.held.email.Address)
		if _, known := c.verdicts.get(addr); known {
			continue
		}
		for _, k := range []string{verdictKey(addr), catchAllKey(domainOf(addr))} {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return
	}
	hits, err := c.p.store.CachedAnswers(ctx, c.job.Tenant, domain.StageVerify, keys, c.p.cfg.Now().Add(-c.job.MaxAge))
	if err != nil {
		c.p.log.Warn("verdict cache lookup failed; asking the verifier", "err", err)
		return
	}
	for k, e := range hits {
		var v cachedVerdict
		if !e.Matched || json.Unmarshal(e.Result, &v) != nil || !validStatus(v.Status) {
			continue
		}
		switch {
		case strings.HasPrefix(k, "email:"):
			c.verdicts.set(strings.TrimPrefix(k, "email:"), v.Status)
		case v.Status == enrich.StatusAcceptAll:
			c.verdicts.setCatchAll(strings.TrimPrefix(k, "domain:"))
		}
	}
}

func (b *verdictBook) setCatchAll(dom string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.catchAll == nil {
		b.byAddr, b.catchAll = map[string]enrich.EmailStatus{}, map[string]bool{}
	}
	b.catchAll[dom] = true
}

// verdictKey and catchAllKey are the lookup_cache keys (stage verify) of an
// address's verdict and of its domain's catch-all.
func verdictKey(addr string) string {
	return cacheKey(domain.StageProfile, store.Row{Kind: domain.InputEmail, Email: addr}) // the erasure's key of a found email
}
func catchAllKey(dom string) string { return "domain:" + dom }

// verifier is the first vendor that verifies an address and is not out of
// the order: of the job's `vendors` option when it has one (its rows ask
// only those), else in configured order; nil when none is left.
func (c *chunkRun) verifier() *lane {
	for _, l := range c.p.lanes {
		if len(c.job.Vendors) > 0 && !slices.Contains(c.job.Vendors, l.name) {
			continue
		}
		if l.caps.Answers(domain.StageVerify, domain.InputEmail, false) && !c.isOut(l.name) {
			return l
		}
	}
	return nil
}

// buyVerdict asks verifier l for addr, held by rows: one call under its
// reservation, priced as the verifier bills it (its free verdicts free).
func (c *chunkRun) buyVerdict(ctx context.Context, l *lane, addr string, rows []*rowWork) {
	w := rows[0]
	rowID := w.row.ID
	key := c.idempotencyKey(l, rowID, domain.StageVerify)
	q := enrich.Question{Stages: []domain.Stage{domain.StageVerify}, Query: enrich.ProfileQuery{Email: addr}}
	var got *enrich.Email
	err := c.call(ctx, l, store.Reservation{RowID: &rowID, RowCount: 1, Stage: domain.StageVerify, Endpoint: l.endpoint(domain.StageVerify),
		IdempotencyKey: key, Credits: l.worst(q)}, w.row.Attempts > 0, func(ctx context.Context) (answered, error) {
		r, err := l.Vendor.Ask(ctx, q, key)
		got = r.Email
		return c.answeredOne(l, q, r), err
	})
	if err == nil {
		status := enrich.StatusUnknown // answered without a verdict: nothing proven
		if got != nil && validStatus(got.Status) {
			status = got.Status
		}
		c.verdicts.set(addr, status)
	}
	c.settleRows(ctx, l, rows, err, func(w *rowWork, _ bool) {
		c.rememberVerdict(w, l.name, addr)
	})
}

// rememberVerdict adds the run's verdict on addr (and a catch-all's
// domain) to the answers the next save writes to the cache, with row w's
// outcome.
func (c *chunkRun) rememberVerdict(w *rowWork, vendor, addr string) {
	s, ok := c.verdicts.get(addr)
	if !ok {
		return
	}
	b, err := json.Marshal(cachedVerdict{Status: s, Vendor: vendor})
	if err != nil {
		return
	}
	now := c.p.cfg.Now()
	entries := []store.CacheEntry{{RowID: w.row.ID, Stage: domain.StageVerify, Key: verdictKey(addr), Matched: true, FetchedAt: now, Result: b}}
	if s == enrich.StatusAcceptAll {
		entries = append(entries, store.CacheEntry{RowID: w.row.ID, Stage: domain.StageVerify, Key: catchAllKey(domainOf(addr)),
			Matched: true, FetchedAt: now, Result: b})
	}
	c.cacheMu.Lock()
	c.cache = append(c.cache, entries...)
	c.cacheMu.Unlock()
}

// toAsk are the rows of asked that still need stage from a vendor: not
// answered (by the cache), not waiting for a verdict, not ended.
func (c *chunkRun) toAsk(stage domain.Stage, asked []*rowWork) []*rowWork {
	var out []*rowWork
	for _, w := range asked {
		if c.needs(w, stage) && w.held == nil {
			out = append(out, w)
		}
	}
	return out
}
