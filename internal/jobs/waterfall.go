package jobs

import (
	"context"
	"slices"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// waterfall runs one stage for todo across the vendors: each row asks its
// vendors in its order (vendorOrder) and stops at the first accepted
// answer. A found answer is accepted, and paid for once: no second vendor
// is asked for a stage a vendor filled. A no-match falls through to the
// next vendor that can answer the row; the row is no_match for the stage
// only when every one of them said no. An error is not a no-match: the row
// ends its run (retried later at the same vendor, by fail), or, for a
// vendor out of credits or refusing its key, that vendor leaves the order
// (takeOut) and the row goes on with the next.
//
// Each round asks every row's next vendor: the rows that go to one vendor
// in a round share its bulk calls (bulk), else single lookups (single).
func (c *chunkRun) waterfall(ctx context.Context, stage domain.Stage, todo []*rowWork) {
	// A row whose call was not made (its reservation closed before it left)
	// is not sent to the same vendor again in this run: it is released.
	last := map[*rowWork]*lane{}
	for !c.stopped() && ctx.Err() == nil && !c.p.isDraining() {
		// An address waiting for its verdict: an invalid one sends its row
		// on to the next finder.
		c.verifyHeld(ctx, todo)
		byLane := map[*lane][]*rowWork{}
		for _, w := range todo {
			if !c.needs(w, stage) || w.held != nil {
				continue // done, or its email waits for its verdict
			}
			l := c.nextVendor(w, stage)
			if l == nil {
				c.exhausted(ctx, w, stage)
				continue
			}
			if last[w] == l {
				continue
			}
			last[w] = l
			byLane[l] = append(byLane[l], w)
		}
		if len(byLane) == 0 {
			return
		}
		for _, l := range c.p.lanes {
			rows := byLane[l]
			if len(rows) == 0 || c.stopped() {
				continue
			}
			if rows = c.unsuppressed(ctx, l, stage, rows); len(rows) == 0 {
				continue
			}
			if l.bulkUsable(stage) {
				c.bulk(ctx, l, stage, rows)
			} else {
				c.single(ctx, l, stage, rows)
			}
		}
	}
}

// exhausted ends stage for a row no vendor is left to ask: a no-match when
// some vendor was asked (and every one asked said no), a halt when the only
// vendors that could answer are out of the order.
func (c *chunkRun) exhausted(ctx context.Context, w *rowWork, stage domain.Stage) {
	c.rowsMu.Lock()
	asked := len(w.tried[stage]) > 0 || len(w.filled) > 0
	c.rowsMu.Unlock()
	if !asked && len(w.skipped) > 0 {
		c.halt(ctx, errAllVendorsOut)
		return
	}
	c.rowsMu.Lock()
	defer c.rowsMu.Unlock()
	c.apply(w, stage, answer{vendor: w.lastNo[stage]}, false)
}

// nextVendor is the first vendor of the row's order for stage that can
// answer it and has not yet: not out of the order, no no-match from it,
// not a vendor whose match filled the row already (it gave all it had).
func (c *chunkRun) nextVendor(w *rowWork, stage domain.Stage) *lane {
	c.rowsMu.Lock()
	defer c.rowsMu.Unlock()
	for _, l := range c.vendorOrder(w, stage) {
		if w.tried[stage][l.name] || w.filled[l.name] {
			continue
		}
		if c.isOut(l.name) {
			if w.skip(l.name) {
				c.skips[l.name]++
			}
			continue
		}
		return l
	}
	return nil
}

// capable are the configured vendors that can answer stage for the row,
// in configured order.
func (c *chunkRun) capable(w *rowWork, stage domain.Stage) []*lane {
	var out []*lane
	for _, l := range c.p.lanes {
		if q := c.questionFor(l, w, stage); l.caps.Answers(stage, q.Query.Kind(), q.Role) {
			out = append(out, l)
		}
	}
	return out
}

// vendorOrder is the order the row asks its capable vendors in for stage:
// the job's `vendors` option when it has one (only those, in its order),
// else the tenants' default order of the vendors file (those listed first,
// the others after them), else the Orderer's.
// It is decided once per row and stage in a run.
func (c *chunkRun) vendorOrder(w *rowWork, stage domain.Stage) []*lane {
	if o, ok := w.order[stage]; ok {
		return o
	}
	capable := c.capable(w, stage)
	var names []string
	rest := false // the capable vendors not named go after the named ones
	switch {
	case len(c.job.Vendors) > 0:
		names = c.job.Vendors
	case len(c.p.cfg.TenantOrder) > 0:
		names, rest = c.p.cfg.TenantOrder, true
	case len(capable) > 1:
		cands := make([]string, len(capable))
		for i, l := range capable {
			cands[i] = l.name
		}
		// Every stage the job wants and the row has not answered yet: the
		// email of a row whose profile is still to find counts in the
		// order of its profile stage (needs says "not yet" until then).
		var stages []domain.Stage
		for _, s := range domain.Stages {
			if c.want[s] && !w.done[s] && (s == stage || c.needs(w, s) || w.found == "") {
				stages = append(stages, s)
			}
		}
		names = c.p.cfg.Orderer.Order(context.Background(), OrderQuery{Tenant: c.job.Tenant, Segment: rowSegment(w.row),
			Stages: stages, Vendors: cands, RowID: w.row.ID})
	}
	order := capable
	if names != nil {
		cands := make([]string, len(capable))
		for i, l := range capable {
			cands[i] = l.name
		}
		order = order[:0:0]
		for _, n := range enrich.Ordered(names, cands, rest) {
			order = append(order, capable[slices.Index(cands, n)])
		}
	}
	if w.order == nil {
		w.order = map[domain.Stage][]*lane{}
	}
	w.order[stage] = order
	return order
}

// rowSegment is the segment of a row for the Orderer: its input kind, and
// its company's country as its domain (or its email's) says.
func rowSegment(r store.Row) domain.Segment {
	dom := r.Domain
	if dom == "" && r.Email != "" {
		if i := strings.LastIndexByte(r.Email, '@'); i >= 0 {
			dom = r.Email[i+1:]
		}
	}
	return domain.SegmentOf(r.Kind, dom, "")
}

// questionFor is what a row asks vendor l for stage: the profile
// stage asks the row's own input; a later stage the profile URL found.
// A vendor whose match fills every stage (Caps.FillsAll) is asked, with
// stage, every later stage the row still needs: its one charge pays for
// them all.
func (c *chunkRun) questionFor(l *lane, w *rowWork, stage domain.Stage) enrich.Question {
	q := enrich.Question{Stages: []domain.Stage{stage}}
	if stage == domain.StageProfile || w.found == "" || l.needsNoProfile(stage) {
		q.Query = profileQuery(w.row)
		q.Role = isRoleRow(w.row)
	} else {
		q.Query = enrich.ProfileQuery{ProfileURL: w.found}
	}
	if l.caps.FillsAll {
		for _, s := range domain.Stages {
			if s != stage && c.want[s] && !w.done[s] && slices.Contains(l.caps.Stages, s) && (s != domain.StageProfile || stage == domain.StageProfile) {
				q.Stages = append(q.Stages, s)
			}
		}
	}
	return q
}

// needsNoProfile says vendor l answers stage from a row's own input, with
// no profile: it does not sell profiles (an email finder), so a profile URL
// is not what it is asked. A vendor that sells profiles finds a later
// stage's answer by the profile (one lookup a stage), or answered it with
// the profile already (one match fills every stage).
func (l *lane) needsNoProfile(stage domain.Stage) bool {
	return stage != domain.StageProfile && !slices.Contains(l.caps.Stages, domain.StageProfile) && slices.Contains(l.caps.Stages, stage)
}

// askableWithoutProfile says a vendor still in the order answers stage
// from the row's own input: a row whose profile was not found still needs
// the stage.
func (c *chunkRun) askableWithoutProfile(w *rowWork, stage domain.Stage) bool {
	kind, role := w.row.Kind, isRoleRow(w.row)
	for _, l := range c.p.lanes {
		if l.needsNoProfile(stage) && l.caps.Answers(stage, kind, role) && !c.isOut(l.name) {
			return true
		}
	}
	return false
}

// saidNo records that vendor said no to stage for the row.
func (w *rowWork) saidNo(stage domain.Stage, vendor string) {
	if w.tried == nil {
		w.tried = map[domain.Stage]map[string]bool{}
	}
	if w.tried[stage] == nil {
		w.tried[stage] = map[string]bool{}
	}
	w.tried[stage][vendor] = true
	if w.lastNo == nil {
		w.lastNo = map[domain.Stage]string{}
	}
	w.lastNo[stage] = vendor
}

// isRoleRow says the row's name is a role title ("VP Sales" at a company).
func isRoleRow(r store.Row) bool {
	return r.Role != "" && normName(r.Name) == normName(r.Role)
}

// noMatchFrom records that vendor l said no to stage for the row: the next
// round asks the next vendor. remember caches it per (vendor, stage,
// input).
func (c *chunkRun) noMatchFrom(l *lane, w *rowWork, stage domain.Stage, remember bool) {
	w.saidNo(stage, l.name)
	if remember {
		c.rememberNoMatch(w, stage, l.name, c.p.cfg.Now())
	}
}

// accept applies vendor l's answer to the row: the stage asked, and, from
// a vendor that fills every stage, each other stage the row still needs
// that the answer holds. A miss of the stage asked is noMatchFrom's.
func (c *chunkRun) accept(l *lane, w *rowWork, stage domain.Stage, a answer, remember bool) {
	a.vendor = l.name
	if !a.matched(stage) {
		c.noMatchFrom(l, w, stage, remember)
		return
	}
	c.apply(w, stage, a, remember)
	if !l.caps.FillsAll {
		return
	}
	if w.filled == nil {
		w.filled = map[string]bool{}
	}
	w.filled[l.name] = true
	for _, s := range domain.Stages {
		if s != stage && !w.done[s] && a.matched(s) && (c.want[s] || s == domain.StageProfile) {
			c.apply(w, s, a, remember)
		}
	}
}
