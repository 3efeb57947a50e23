package jobs

import (
	"context"
	"sync"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// single asks vendor l stage for todo: one lookup per distinct input,
// concurrently.
func (c *chunkRun) single(ctx context.Context, l *lane, stage domain.Stage, todo []*rowWork) {
	c.perInput(ctx, todo, func(w *rowWork) string { return cacheKey(stage, w.rowWithFound()) },
		func(_ string, rows []*rowWork) { c.lookup(ctx, l, stage, rows) })
}

// groupRows groups rows by key; order is the keys in the order each first came.
func groupRows(rows []*rowWork, key func(*rowWork) string) (groups map[string][]*rowWork, order []string) {
	groups = map[string][]*rowWork{}
	for _, w := range rows {
		k := key(w)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], w)
	}
	return groups, order
}

// perInput groups rows by key, then calls call once a group, in the order
// each key first came, at most LookupConcurrency at once, until the run
// stops: one call per distinct question, its answer shared by the rows
// asking it.
func (c *chunkRun) perInput(ctx context.Context, rows []*rowWork, key func(*rowWork) string, call func(key string, rows []*rowWork)) {
	groups, order := groupRows(rows, key)
	sem := make(chan struct{}, c.p.cfg.LookupConcurrency)
	var wg sync.WaitGroup
	for _, k := range order {
		if c.stopped() || ctx.Err() != nil || c.p.isDraining() {
			break
		}
		sem <- struct{}{}
		group := groups[k]
		wg.Go(func() {
			defer func() { <-sem }()
			call(k, group)
		})
	}
	wg.Wait()
}

// answeredOne is what a single call's answer r to q says of the call: its
// charge priced, the contract's bound, the vendor's rate window and plan
// (a wrong person counted).
func (c *chunkRun) answeredOne(l *lane, q enrich.Question, r enrich.Answer) answered {
	if r.WrongPerson {
		c.p.cfg.Metrics.WrongPerson(l.name)
	}
	return answered{charge: c.priced(l, r.Charge), bound: l.Vendor.MaxCharge(q), hidden: r.ContactsHidden, rateLimit: r.RateLimit}
}

// lookup makes the single call of stage to vendor l for rows sharing one input.
func (c *chunkRun) lookup(ctx context.Context, l *lane, stage domain.Stage, rows []*rowWork) {
	if c.isOut(l.name) {
		return // taken out meanwhile: the rows ask the next vendor
	}
	w := rows[0]
	rowID := w.row.ID
	key := c.idempotencyKey(l, rowID, stage)
	q := c.questionFor(l, w, stage)
	var a answer
	var charged int64
	err := c.call(ctx, l, store.Reservation{RowID: &rowID, RowCount: 1, Stage: stage, Endpoint: l.endpoint(stage), IdempotencyKey: key,
		Credits: l.worst(q)}, w.row.Attempts > 0, func(ctx context.Context) (answered, error) {
		r, err := l.Vendor.Ask(ctx, q, key)
		a = answer{profile: r.Profile, email: r.Email, phones: r.Phones}
		got := c.answeredOne(l, q, r)
		charged = got.charge.Credits
		return got, err
	})
	if ve, ok := enrich.AsError(err); ok && ve.Class == enrich.ClassSuppressed {
		c.suppressed(ctx, l, q, rows)
		return
	}
	c.settleRows(ctx, l, rows, err, func(w *rowWork, remember bool) {
		c.accept(l, w, stage, a, remember)
	})
	if err == nil {
		c.observe(l, w.row, q, a, map[domain.Stage]int64{stage: charged}, nil)
	}
}

// idempotencyKey is the key of a single call of stage for a row at vendor
// l: stable across retries of the call, distinct per vendor (the default
// vendor's as it always was).
func (c *chunkRun) idempotencyKey(l *lane, rowID int64, stage domain.Stage) string {
	if l.name == DefaultVendorName {
		return idempotencyKey(c.job.ID, rowID, stage)
	}
	return idempotencyKey(l.name, c.job.ID, rowID, stage)
}

// endpoint names a vendor's endpoint of stage (domain.StageBulk: its bulk
// call) in the ledger and metrics: the adapter's own name for it
// (enrich.Endpoints), else the vendor's name and the stage.
func (l *lane) endpoint(stage domain.Stage) string {
	if e, ok := l.Vendor.(enrich.Endpoints); ok {
		return e.Endpoint(stage)
	}
	return l.name + ":" + string(stage)
}
