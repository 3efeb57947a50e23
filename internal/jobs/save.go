package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// save writes the changes of the run: the rows' outcomes and end states
// (decideEnd), the answers to remember, and the release of the rows stopped
// with nothing to save, which counts no attempt.
func (c *chunkRun) save(ctx context.Context, final bool) error {
	var outs []store.Outcome
	var release []int64
	for _, w := range c.rows {
		c.decideEnd(w, final)
		if !w.dirty {
			continue
		}
		state, err := w.savedState()
		if err != nil {
			return fmt.Errorf("save outcomes: %w", err)
		}
		if state == domain.RowPending && len(w.out.NoMatches) == 0 && w.out.Profile == nil && w.out.Email == nil && w.out.Phone == nil {
			release = append(release, w.row.ID)
			w.dirty = false
			continue
		}
		o := w.out
		o.RowID = w.row.ID
		o.StagesDone = w.stagesDone()
		o.FoundProfileURL = w.found
		o.AnyMatch = w.match
		o.State = state
		if o.Prov.FetchedAt.IsZero() {
			o.Prov.FetchedAt = c.p.cfg.Now()
		}
		outs = append(outs, o)
		w.out = store.Outcome{RowID: w.row.ID}
		w.dirty = false
	}
	c.cacheMu.Lock()
	cache := c.cache
	c.cache = nil
	c.cacheMu.Unlock()
	// Outcomes are written even when the task's context ends (shutdown):
	// credits were spent for them.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := c.p.store.SaveOutcomes(wctx, c.job.Tenant, c.token, outs, cache); err != nil {
		return fmt.Errorf("save outcomes: %w", err)
	}
	saved := len(outs) > 0 || len(cache) > 0 // and the lookup claims given up with them
	for _, o := range outs {
		if o.State.Terminal() {
			c.p.cfg.Metrics.RowFinished(string(o.State))
		}
	}
	if c.claimed {
		// The answers are in the cache now (SaveOutcomes gave the claims up
		// with them): whoever waits for them finds them. With nothing saved,
		// nothing bought is to be remembered: the inputs are free to buy.
		if !saved {
			if err := c.p.store.ReleaseLookups(wctx, c.token); err != nil {
				c.p.log.Warn("release lookup claims failed; they expire with the lease", "err", err)
			}
		}
		c.claimed = false
	}
	if len(release) > 0 {
		if err := c.p.store.ReleaseRows(wctx, c.token, release); err != nil {
			return fmt.Errorf("release rows: %w", err)
		}
	}
	return nil
}
