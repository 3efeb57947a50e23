package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// bulk runs the profile stage (and the later stages the job wants) with
// POST /v1/bulk, one call per BulkSize distinct inputs.
func (c *chunkRun) bulk(ctx context.Context, todo []*rowWork) {
	var include []domain.Stage
	perRow := c.p.cfg.Prices.Worst(domain.StageProfile)
	for _, s := range []domain.Stage{domain.StageEmail, domain.StagePhone} {
		if c.want[s] {
			include = append(include, s)
			perRow += c.p.cfg.Prices.Worst(s)
		}
	}
	groups := map[string][]*rowWork{}
	var order []string
	for _, w := range todo {
		k := cacheKey(domain.StageProfile, w.row)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], w)
	}
	for len(order) > 0 && !c.stopped() && ctx.Err() == nil && !c.p.isDraining() {
		n := min(len(order), c.p.cfg.BulkSize)
		// Shrink the call to what the budget still covers.
		if avail, limited, err := c.p.store.Available(ctx, c.job.ID); err == nil && limited && avail < int64(n)*perRow {
			n = int(avail / perRow)
			if n == 0 {
				c.halt(ctx, c.budgetError(ctx, perRow))
				return
			}
		}
		keys := order[:n]
		order = order[n:]
		c.bulkCall(ctx, keys, groups, include, perRow)
	}
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

// bulkSplit estimates a bulk call's charge by stage with the price book,
// for the ledger's "what did the job cost, by stage".
func (c *chunkRun) bulkSplit(queries []enrich.ProfileQuery, include []domain.Stage, res enrich.BulkResult) map[domain.Stage]int64 {
	split := map[domain.Stage]int64{}
	for i, it := range res.Items {
		if it.Err != nil || i >= len(queries) {
			continue
		}
		p, _ := c.p.cfg.Prices.Price(enrich.ProfileClass(queries[i].Kind(), it.Profile != nil))
		split[domain.StageProfile] += p
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
			p, _ := c.p.cfg.Prices.Price(class)
			split[s] += p
		}
	}
	return split
}

func (c *chunkRun) bulkCall(ctx context.Context, keys []string, groups map[string][]*rowWork, include []domain.Stage, perRow int64) {
	queries := make([]enrich.ProfileQuery, len(keys))
	for i, k := range keys {
		queries[i] = profileQuery(groups[k][0].row)
	}
	idem := bulkIdempotencyKey(c.job.ID, keys, include)
	var res enrich.BulkResult
	again := false
	for _, k := range keys {
		for _, w := range groups[k] {
			again = again || w.row.Attempts > 0
		}
	}
	err := c.call(ctx, store.Reservation{RowCount: len(keys), Stage: domain.StageBulk, Endpoint: "/v1/bulk", IdempotencyKey: idem,
		Credits: int64(len(keys)) * perRow}, again, func(ctx context.Context) (answered, error) {
		var err error
		res, err = c.p.vendor.Bulk(ctx, queries, include, idem)
		if err != nil {
			return answered{charge: res.Charge}, err
		}
		ch := res.Charge
		ch.Estimate = c.p.cfg.Prices.BulkPrice(queries, include, res.Items)
		if !ch.Reported {
			ch.Credits = ch.Estimate
		}
		classes, _ := enrich.BulkClasses(queries, include, res.Items)
		return answered{charge: ch, split: c.bulkSplit(queries, include, res), classes: classes}, nil
	})
	var ve *enrich.Error
	if err != nil && errors.As(err, &ve) && ve.Class == enrich.ClassPermanent && len(keys) > 1 {
		// The whole call was refused: isolate the bad input with single lookups.
		c.p.log.Warn("bulk call refused; falling back to single lookups", "job_id", c.job.ID, "err", err)
		var rows []*rowWork
		for _, k := range keys {
			rows = append(rows, groups[k]...)
		}
		c.single(ctx, domain.StageProfile, rows)
		return
	}
	if err != nil {
		var rows []*rowWork
		for _, k := range keys {
			c.settleRows(ctx, groups[k], err, nil)
			rows = append(rows, groups[k]...)
		}
		c.alignRetries(rows)
		return
	}
	for i, k := range keys {
		rows := groups[k]
		if i >= len(res.Items) {
			c.settleRows(ctx, rows, &enrich.Error{Class: enrich.ClassTransient, Message: "bulk answer lacks this row"}, nil)
			continue
		}
		item := res.Items[i]
		if item.Err != nil {
			c.settleRows(ctx, rows, item.Err, nil)
			continue
		}
		c.settleRows(ctx, rows, nil, func(w *rowWork, remember bool) {
			c.apply(w, domain.StageProfile, answer{profile: item.Profile}, remember)
			if item.Profile == nil {
				return // the later stages were not looked up
			}
			for _, s := range include {
				c.apply(w, s, answer{email: item.Email, phones: item.Phones}, remember)
			}
		})
	}
}
