package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// bulk asks vendor l stage for todo in bulk calls, one per bulkSize
// distinct inputs. At the seed a bulk call finds the profile and the later
// stages the job wants with it.
func (c *chunkRun) bulk(ctx context.Context, l *lane, stage domain.Stage, todo []*rowWork) {
	var include []domain.Stage
	if l.seed {
		for _, s := range []domain.Stage{domain.StageEmail, domain.StagePhone} {
			if c.want[s] {
				include = append(include, s)
			}
		}
	}
	groups := map[string][]*rowWork{}
	var order []string
	for _, w := range todo {
		k := cacheKey(stage, w.rowWithFound())
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], w)
	}
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

// bulkQuestion is what a bulk call asks vendor l for a row: the seed's
// asks the profile and the stages included.
func (c *chunkRun) bulkQuestion(l *lane, w *rowWork, stage domain.Stage, include []domain.Stage) enrich.Question {
	q := c.questionFor(l, w, stage)
	if l.seed {
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

// bulkSplit estimates a seed bulk call's charge by stage with the price
// book, in budget units, for the ledger's "what did the job cost, by stage".
func (c *chunkRun) bulkSplit(l *lane, queries []enrich.ProfileQuery, include []domain.Stage, items []enrich.BulkItem) map[domain.Stage]int64 {
	split := map[domain.Stage]int64{}
	for i, it := range items {
		if it.Err != nil || i >= len(queries) {
			continue
		}
		p, _ := l.Prices.Price(enrich.ProfileClass(queries[i].Kind(), it.Profile != nil))
		split[domain.StageProfile] += l.units(p)
		if it.Profile == nil {
			continue
		}
		for _, s := range include {
			var class enrich.PriceClass
			switch s {
			case domain.StageEmail:
				class = enrich.EmailClass(it.Email)
			case domain.StagePhone:
				class = enrich.PhoneClass(it.Phones)
			default:
				continue
			}
			p, _ := l.Prices.Price(class)
			split[s] += l.units(p)
		}
	}
	return split
}

func (c *chunkRun) bulkCall(ctx context.Context, l *lane, stage domain.Stage, keys []string, groups map[string][]*rowWork, include []domain.Stage) {
	if c.isOut(l.name) {
		return // taken out meanwhile: the rows ask the next vendor
	}
	qs := make([]enrich.Question, len(keys))
	queries := make([]enrich.ProfileQuery, len(keys))
	var reserve, bound int64
	for i, k := range keys {
		qs[i] = c.bulkQuestion(l, groups[k][0], stage, include)
		queries[i] = qs[i].Query
		reserve += l.worst(qs[i])
		bound += l.Vendor.MaxCharge(qs[i])
	}
	idem := bulkIdempotencyKey(c.job.ID, keys, include)
	if l.name != DefaultVendorName {
		idem = idempotencyKey(l.name, stage, idem)
	}
	var res enrich.BulkAnswer
	again := false
	for _, k := range keys {
		for _, w := range groups[k] {
			again = again || w.row.Attempts > 0
		}
	}
	endpoint := "/v1/bulk"
	if !l.seed {
		endpoint = l.name + ":bulk"
	}
	err := c.call(ctx, l, store.Reservation{RowCount: len(keys), Stage: domain.StageBulk, Endpoint: endpoint, IdempotencyKey: idem,
		Credits: reserve}, again, func(ctx context.Context) (answered, error) {
		var err error
		res, err = l.Vendor.AskBulk(ctx, qs, idem)
		if err != nil {
			return answered{charge: res.Charge, bound: bound}, err
		}
		ch := res.Charge
		if !l.seed {
			return answered{charge: ch, bound: bound}, nil
		}
		ch.Estimate = l.Prices.BulkPrice(queries, include, res.Items)
		if !ch.Reported {
			ch.Credits = ch.Estimate
		}
		classes, _ := enrich.BulkClasses(queries, include, res.Items)
		return answered{charge: ch, split: c.bulkSplit(l, queries, include, res.Items), classes: classes, bound: bound}, nil
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
		if item.Err != nil {
			c.settleRows(ctx, l, rows, item.Err, nil)
			continue
		}
		a := answer{profile: item.Profile, email: item.Email, phones: item.Phones}
		c.settleRows(ctx, l, rows, nil, func(w *rowWork, remember bool) {
			c.accept(l, w, stage, a, remember)
			if !l.seed || item.Profile == nil {
				return // the later stages were not looked up
			}
			for _, s := range include {
				if a.matched(s) {
					c.apply(w, s, answer{vendor: l.name, email: item.Email, phones: item.Phones}, remember)
				} else {
					c.noMatchFrom(l, w, s, remember)
				}
			}
		})
		c.observe(l, rows[0].row, qs[i], a, item.EstimatedCredits)
	}
}
