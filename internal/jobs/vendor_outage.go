package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// VendorOutageFor is how long a vendor that said it was out of credits, or
// refused its key, stays out of a tenant's waterfall: then one call tries
// it again (a 402 or a 401 costs nothing).
const VendorOutageFor = time.Hour

// errAllVendorsOut: a row has no vendor left to ask but vendors out of the
// order; the job waits for them (paused), it does not call its rows no_match.
var errAllVendorsOut = errors.New("every vendor that can answer the row is out of the order (out of credits, or its key refused)")

// outOfOrder says whether an error takes its vendor out of the tenant's
// waterfall: out of credits, or (with another vendor to go on with) its key
// refused. A lone vendor refusing its key pauses the job instead (halt).
func (c *chunkRun) outOfOrder(ve *enrich.Error) bool {
	switch ve.Class {
	case enrich.ClassOutOfCredits:
		return true
	case enrich.ClassUnauthorized, enrich.ClassForbidden:
		return len(c.p.lanes) > 1
	}
	return false
}

// loadOutages reads the vendors out of the tenant's order. A failure to
// read them asks every vendor (one that is out says so again).
func (c *chunkRun) loadOutages(ctx context.Context) {
	c.out = map[string]bool{}
	if len(c.p.lanes) < 2 {
		return
	}
	outs, err := c.p.store.VendorsOut(ctx, c.job.Tenant)
	if err != nil {
		c.p.log.Warn("vendors out of the order not read; asking every vendor", "job_id", c.job.ID, "err", err)
		return
	}
	for _, o := range outs {
		c.out[o.Vendor] = true
	}
}

func (c *chunkRun) isOut(vendor string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out[vendor]
}

// takeOut takes vendor l out of the tenant's waterfall, loudly: in
// Postgres (every worker's next chunk skips it), a metric, a warning. The
// rows of the call go on with the next vendor.
func (c *chunkRun) takeOut(ctx context.Context, l *lane, ve *enrich.Error) {
	c.mu.Lock()
	was := c.out[l.name]
	c.out[l.name] = true
	c.mu.Unlock()
	if was {
		return
	}
	// The reason is shown to the tenant (vendors_out): its class only. The
	// vendor's own text speaks of the operator's account: the log's.
	reason := "out of credits"
	if ve.Class != enrich.ClassOutOfCredits {
		reason = "key refused"
	}
	if ve.Status != 0 {
		reason += fmt.Sprintf(" (%d)", ve.Status)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := c.p.store.TakeVendorOut(sctx, c.job.Tenant, l.name, reason, VendorOutageFor); err != nil {
		c.p.log.Error("vendor out of the order not recorded; this worker skips it", "vendor", l.name, "err", err)
	}
	c.p.cfg.Metrics.VendorOut(l.name, ve.Class.String())
	c.p.log.Warn("vendor taken out of the waterfall; its rows go to the next vendor", "tenant", c.job.Tenant, "job_id", c.job.ID,
		"vendor", l.name, "for", VendorOutageFor, "reason", reason, "err", ve.Error())
}

// observe tells the Orderer (at the run's end) what vendor l answered to
// q for a row: each stage looked up, found or not, with what it cost
// (credits by stage; a stage absent from it cost nothing). looked says
// which stages beyond q's first were looked up (nil: all): a stage a bulk
// call included but did not look up (no profile found) is not an ask.
func (c *chunkRun) observe(l *lane, r store.Row, q enrich.Question, a answer, credits map[domain.Stage]int64, looked func(domain.Stage) bool) {
	seg := rowSegment(r)
	c.obsMu.Lock()
	defer c.obsMu.Unlock()
	for i, s := range q.Stages {
		if i > 0 && looked != nil && !looked(s) {
			continue
		}
		found := a.matched(s)
		if k := (rowVendor{r.ID, l.name}); s == domain.StageEmail && c.rejectedEmails[k] {
			found = false // the verifier found it invalid before the call was observed
			delete(c.rejectedEmails, k)
		}
		c.obs = append(c.obs, Observation{Tenant: c.job.Tenant, Vendor: l.name, Segment: seg, Stage: s, Found: found, Credits: credits[s], row: r.ID})
	}
}

// rowVendor is one row's answer from one vendor.
type rowVendor struct {
	row    int64
	vendor string
}

// unobserveEmail turns vendor's found email of row into a miss for the
// learned order: the verifier found the address invalid, so the finder did
// not answer the stage (what it cost stays: it was paid for). Observed
// already in this run, the observation is amended; not yet (a verdict known
// when the answer was applied), it is when observed. An answer observed in
// an earlier run (a verdict that came later) was taught as found.
func (c *chunkRun) unobserveEmail(row int64, vendor string) {
	c.obsMu.Lock()
	defer c.obsMu.Unlock()
	for i := len(c.obs) - 1; i >= 0; i-- {
		if o := &c.obs[i]; o.row == row && o.Vendor == vendor && o.Stage == domain.StageEmail && o.Found {
			o.Found = false
			return
		}
	}
	if c.rejectedEmails == nil {
		c.rejectedEmails = map[rowVendor]bool{}
	}
	c.rejectedEmails[rowVendor{row, vendor}] = true
}

// syncOrder lets the Orderer read what every worker taught it of the
// job's tenant, before the chunk orders its rows (OrderSyncer).
func (c *chunkRun) syncOrder(ctx context.Context) {
	s, ok := c.p.cfg.Orderer.(OrderSyncer)
	if !ok || len(c.p.lanes) < 2 {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.Sync(sctx, c.job.Tenant); err != nil && ctx.Err() == nil {
		c.p.log.Warn("the tenant's learned vendor rates not read; the chunk orders by what this worker holds", "job_id", c.job.ID, "err", err)
	}
}

// flushWaterfall tells the Orderer the run's answers and records the rows
// that skipped a vendor out of the order. Failures are logged: learning
// and counting never fail a row.
func (c *chunkRun) flushWaterfall(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	c.obsMu.Lock()
	obs := c.obs
	c.obs = nil
	c.obsMu.Unlock()
	if len(obs) > 0 && len(c.p.lanes) > 1 {
		if err := c.p.cfg.Orderer.Observe(sctx, obs); err != nil {
			c.p.log.Warn("vendor answers not recorded for the order", "job_id", c.job.ID, "err", err)
		}
	}
	c.rowsMu.Lock()
	skips := c.skips
	c.skips = map[string]int64{}
	c.rowsMu.Unlock()
	if err := c.p.store.AddVendorSkips(sctx, c.job.ID, skips); err != nil {
		c.p.log.Warn("rows that skipped a vendor not counted", "job_id", c.job.ID, "err", err)
	}
}

// askable drops the rows no vendor is left to ask for stage (exhausted):
// every vendor that can answer said no in this run already.
func (c *chunkRun) askable(ctx context.Context, stage domain.Stage, todo []*rowWork) []*rowWork {
	out := todo[:0:0]
	for _, w := range todo {
		if c.nextVendor(w, stage) == nil {
			c.exhausted(ctx, w, stage)
			continue
		}
		out = append(out, w)
	}
	return out
}
