package jobs

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// bulk asks vendor l stage for todo in bulk calls, one per bulkSize
// distinct inputs. At a vendor whose bulk call buys later stages with
// stage (enrich.BulkBuyer) it asks those the job wants too.
func (c *chunkRun) bulk(ctx context.Context, l *lane, stage domain.Stage, todo []*rowWork) {
	var include []domain.Stage
	if l.buyer != nil {
		var wanted []domain.Stage
		for _, s := range domain.Stages {
			if c.want[s] {
				wanted = append(wanted, s)
			}
		}
		include = l.buyer.BulkStages(stage, wanted)[1:]
	}
	groups, order := groupRows(todo, func(w *rowWork) string { return cacheKey(stage, w.rowWithFound()) })
	for len(order) > 0 && !c.stopped() && ctx.Err() == nil && !c.p.isDraining() {
		n := min(len(order), l.bulkSize())
		perRow := l.worst(c.bulkQuestion(l, groups[order[0]][0], stage, include))
		// Shrink the call to what the budget still covers.
		if avail, limited, err := c.p.store.Available(ctx, c.job.ID); err == nil && limited && avail < int64(n)*perRow {
			n = int(avail / max(perRow, 1))
			if n == 0 {
				c.halt(ctx, c.budgetError(ctx, perRow))
				return
			}
		}
		keys := order[:n]
		order = order[n:]
		c.bulkCall(ctx, l, stage, keys, groups, include)
	}
}

// bulkQuestion is what a bulk call asks vendor l for a row: at a vendor
// whose bulk call buys later stages, stage and the stages included.
func (c *chunkRun) bulkQuestion(l *lane, w *rowWork, stage domain.Stage, include []domain.Stage) enrich.Question {
	q := c.questionFor(l, w, stage)
	if l.buyer != nil {
		q.Stages = append([]domain.Stage{stage}, include...)
	}
	return q
}

// alignRetries gives the rows of one failed bulk call one due time, so they
// come back together and are sent again as the same call, under the same
// Idempotency-Key: a vendor that did the work the first time replays it
// instead of billing it again.
func (c *chunkRun) alignRetries(rows []*rowWork) {
	c.rowsMu.Lock()
	defer c.rowsMu.Unlock()
	var due time.Time
	for _, w := range rows {
		if w.end == domain.RowRetryWait && w.out.NextAttemptAt.After(due) {
			due = w.out.NextAttemptAt
		}
	}
	for _, w := range rows {
		if w.end == domain.RowRetryWait {
			w.out.NextAttemptAt = due
		}
	}
}

// inUnits is a split of credits by stage in budget units.
func (l *lane) inUnits(split map[domain.Stage]int64) map[domain.Stage]int64 {
	if split == nil {
		return nil
	}
	out := make(map[domain.Stage]int64, len(split))
	for s, n := range split {
		out[s] = l.units(n)
	}
	return out
}

func (c *chunkRun) bulkCall(ctx context.Context, l *lane, stage domain.Stage, keys []string, groups map[string][]*rowWork, include []domain.Stage) {
	if c.isOut(l.name) {
		return // taken out meanwhile: the rows ask the next vendor
	}
	qs := make([]enrich.Question, len(keys))
	var reserve, bound int64
	for i, k := range keys {
		qs[i] = c.bulkQuestion(l, groups[k][0], stage, include)
		reserve += l.worst(qs[i])
		bound += l.Vendor.MaxCharge(qs[i])
	}
	idem := bulkIdempotencyKey(c.job.ID, keys, include)
	if l.name != DefaultVendorName {
		idem = idempotencyKey(l.name, stage, idem)
	}
	var res enrich.BulkAnswer
	var bill enrich.BulkBill
	again := false
	for _, k := range keys {
		for _, w := range groups[k] {
			again = again || w.row.Attempts > 0
		}
	}
	chunk := groups[keys[0]][0].row.Chunk // a run's rows are one chunk's
	err := c.call(ctx, l, store.Reservation{RowCount: len(keys), Stage: domain.StageBulk, Endpoint: l.endpoint(domain.StageBulk), IdempotencyKey: idem,
		Credits: reserve, Chunk: &chunk}, again, func(ctx context.Context) (answered, error) {
		var err error
		res, err = l.Vendor.AskBulk(ctx, qs, idem)
		if err != nil {
			return answered{charge: res.Charge, bound: bound}, err
		}
		ch := res.Charge
		if l.teacher == nil {
			return answered{charge: ch, bound: bound, hidden: res.ContactsHidden, rateLimit: res.RateLimit}, nil
		}
		bill = l.teacher.BulkBill(l.Prices, qs, res.Items)
		ch = ch.Or(bill.Estimate)
		return answered{charge: ch, split: l.inUnits(bill.Split), classes: bill.Classes, bound: bound, hidden: res.ContactsHidden, rateLimit: res.RateLimit}, nil
	})
	var ve *enrich.Error
	if err != nil && errors.As(err, &ve) && ve.Class == enrich.ClassPermanent && len(keys) > 1 {
		// The whole call was refused: isolate the bad input with single lookups.
		c.p.log.Warn("bulk call refused; falling back to single lookups", "job_id", c.job.ID, "vendor", l.name, "err", err)
		var rows []*rowWork
		for _, k := range keys {
			rows = append(rows, groups[k]...)
		}
		c.single(ctx, l, stage, rows)
		return
	}
	if err != nil {
		var rows []*rowWork
		for _, k := range keys {
			c.settleRows(ctx, l, groups[k], err, nil)
			rows = append(rows, groups[k]...)
		}
		c.alignRetries(rows)
		return
	}
	for i, k := range keys {
		rows := groups[k]
		if i >= len(res.Items) {
			c.settleRows(ctx, l, rows, &enrich.Error{Class: enrich.ClassTransient, Message: "bulk answer lacks this row"}, nil)
			continue
		}
		item := res.Items[i]
		if item.WrongPerson {
			c.p.cfg.Metrics.WrongPerson(l.name)
		}
		if item.Err != nil {
			c.settleRows(ctx, l, rows, item.Err, nil)
			continue
		}
		a := answer{profile: item.Profile, email: item.Email, phones: item.Phones}
		c.settleRows(ctx, l, rows, nil, func(w *rowWork, remember bool) {
			c.accept(l, w, stage, a, remember)
			for _, s := range include { // a stage neither found nor missed was not looked up
				if a.matched(s) {
					c.apply(w, s, answer{vendor: l.name, email: item.Email, phones: item.Phones}, remember)
				} else if slices.Contains(item.Missed, s) {
					c.noMatchFrom(l, w, s, remember)
				}
			}
		})
		c.observe(l, rows[0].row, qs[i], a, itemCredits(bill, i, stage, item), func(s domain.Stage) bool {
			return a.matched(s) || slices.Contains(item.Missed, s) || !slices.Contains(include, s)
		})
	}
}

// itemCredits is what bulk item i cost by stage: the bill's split of it
// where the adapter prices its items stage by stage, else the item's whole
// price on the stage asked (a vendor that bills one charge for every stage
// a record fills).
func itemCredits(bill enrich.BulkBill, i int, stage domain.Stage, item enrich.BulkItem) map[domain.Stage]int64 {
	if i < len(bill.Items) && bill.Items[i] != nil {
		return bill.Items[i]
	}
	return map[domain.Stage]int64{stage: item.EstimatedCredits}
}
