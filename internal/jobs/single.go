package jobs

import (
	"context"
	"sync"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// single runs one lookup per distinct input of stage, concurrently.
func (c *chunkRun) single(ctx context.Context, stage domain.Stage, todo []*rowWork) {
	groups := map[string][]*rowWork{}
	var order []string
	for _, w := range todo {
		k := cacheKey(stage, w.rowWithFound())
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], w)
	}
	sem := make(chan struct{}, c.p.cfg.LookupConcurrency)
	var wg sync.WaitGroup
	for _, k := range order {
		if c.stopped() || ctx.Err() != nil || c.p.isDraining() {
			break
		}
		sem <- struct{}{}
		rows := groups[k]
		wg.Go(func() {
			defer func() { <-sem }()
			c.lookup(ctx, stage, rows)
		})
	}
	wg.Wait()
}

// lookup makes the single call of stage for rows sharing one input.
func (c *chunkRun) lookup(ctx context.Context, stage domain.Stage, rows []*rowWork) {
	w := rows[0]
	rowID := w.row.ID
	key := idempotencyKey(c.job.ID, rowID, stage)
	var a answer
	endpoint := "/v1/" + string(stage)
	err := c.call(ctx, store.Reservation{RowID: &rowID, RowCount: 1, Stage: stage, Endpoint: endpoint, IdempotencyKey: key,
		Credits: c.p.cfg.Prices.Worst(stage)}, w.row.Attempts > 0, func(ctx context.Context) (answered, error) {
		switch stage {
		case domain.StageProfile:
			r, err := c.p.vendor.Profile(ctx, profileQuery(w.row), key)
			a.profile = r.Profile
			return answered{charge: c.priced(r.Charge)}, err
		case domain.StageEmail:
			r, err := c.p.vendor.Email(ctx, w.found, key)
			a.email = r.Email
			return answered{charge: c.priced(r.Charge)}, err
		default:
			r, err := c.p.vendor.Phone(ctx, w.found, key)
			a.phones = r.Phones
			return answered{charge: c.priced(r.Charge)}, err
		}
	})
	c.settleRows(ctx, rows, err, func(w *rowWork, remember bool) { c.apply(w, stage, a, remember) })
}
