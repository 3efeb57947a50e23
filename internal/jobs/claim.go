package jobs

import (
	"context"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// claimTTL is how long a lookup claim lives: 90 % of the rows' lease.
func claimTTL(lease time.Duration) time.Duration { return lease * 9 / 10 }

// heartbeat extends the lease of the claimed rows until stopped.
func (p *Processor) heartbeat(ctx context.Context, claim store.Claim) func() {
	return KeepLease(ctx, p.store, p.log, claim.Token, claim.IDs(), p.cfg.Lease)
}

// claimLookups makes concurrent workers share one call per input: it claims
// the inputs of todo for this run. Rows whose input another worker is
// buying right now wait a moment and then find its answer in the cache.
// It returns the rows to look up.
func (c *chunkRun) claimLookups(ctx context.Context, stage domain.Stage, todo []*rowWork) []*rowWork {
	if c.job.MaxAge <= 0 || len(todo) == 0 {
		return todo // no reuse asked: every row buys its own answer
	}
	mine, ok := c.claimKeys(ctx, stage, todo, func(w *rowWork) string { return cacheKey(stage, w.rowWithFound()) },
		"waiting for another worker's lookup of the same "+string(stage)+" input")
	if !ok {
		return todo
	}
	// An answer saved between our cache check and our claim is served now.
	return c.fromCache(ctx, stage, mine)
}

// claimKeys claims the keys (key of each row) of rows under stage for this
// run, and returns the rows whose key it won. The others leave the run,
// waiting (why) for the worker that holds their key: they come back a
// moment later. ok is false when the claims failed: nothing was claimed,
// and the caller goes on without them.
func (c *chunkRun) claimKeys(ctx context.Context, stage domain.Stage, rows []*rowWork, key func(*rowWork) string, why string) (mine []*rowWork, ok bool) {
	keys := make([]string, len(rows))
	seen := map[string]bool{}
	var distinct []string
	for i, w := range rows {
		keys[i] = key(w)
		if !seen[keys[i]] {
			seen[keys[i]] = true
			distinct = append(distinct, keys[i])
		}
	}
	// A claim lives a little less than the rows' lease (and is extended with
	// it), so when a lost worker's rows are taken over its claims are gone.
	won, err := c.p.store.ClaimLookups(ctx, c.job.Tenant, stage, distinct, c.token, claimTTL(c.p.cfg.Lease))
	if err != nil {
		c.p.log.Warn("claims failed; going on without them", "stage", stage, "err", err)
		return nil, false
	}
	c.claimed = true
	wonSet := make(map[string]bool, len(won))
	for _, k := range won {
		wonSet[k] = true
	}
	// One due time for every waiting row: they come back together (and a
	// bulk call of them is the same call, under the same Idempotency-Key).
	due := c.p.cfg.Now().Add(time.Second + time.Duration(c.p.cfg.Rand()*float64(time.Second)))
	c.rowsMu.Lock()
	defer c.rowsMu.Unlock()
	for i, w := range rows {
		if wonSet[keys[i]] {
			mine = append(mine, w)
			continue
		}
		w.leave(domain.RowRetryWait)
		w.out.LastError = why
		w.out.NextAttemptAt = due
	}
	return mine, true
}
