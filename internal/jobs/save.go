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
		o.PersonHashes = c.personHashes(w, o)
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
	written, err := c.p.store.SaveOutcomes(wctx, c.job.Tenant, c.token, outs, cache)
	if err != nil {
		return fmt.Errorf("save outcomes: %w", err)
	}
	c.dropUnwritten(outs, written)
	saved := len(outs) > 0 // and the lookup claims given up with them (a cache entry is written only with its row's outcome)
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

// personHashes are the keyed hashes of the inputs that stand for a row's
// person (PersonKeys: its input, and the profile URL, email and name with
// company found), for SaveOutcomes to check against the suppression list;
// none without an erasure key.
func (c *chunkRun) personHashes(w *rowWork, o store.Outcome) [][]byte {
	key := c.p.cfg.ErasureKey
	if len(key) == 0 {
		return nil
	}
	r := store.ErasedRow{Kind: w.row.Kind, ProfileURL: w.row.ProfileURL, Name: w.row.Name, Company: w.row.Company,
		Domain: w.row.Domain, Email: w.row.Email, Role: w.row.Role, FoundProfileURL: w.found}
	if o.Profile != nil {
		r.FoundName, r.FoundComp = o.Profile.Name, o.Profile.Company
	}
	if o.Email != nil {
		r.FoundEmail = o.Email.Email
	}
	_, keys := PersonKeys(r)
	hashes := make([][]byte, 0, len(keys))
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			hashes = append(hashes, KeyedHash(key, k))
		}
	}
	return hashes
}

// dropUnwritten stops the work on the rows whose outcome the save did not
// write: their claim was lost, an erasure removed them, or their person was
// erased while they were in flight (stored skipped). No later stage is
// bought for them.
func (c *chunkRun) dropUnwritten(outs []store.Outcome, written []int64) {
	if len(written) == len(outs) {
		return
	}
	lost := make(map[int64]bool, len(outs))
	for _, o := range outs {
		lost[o.RowID] = true
	}
	for _, id := range written {
		delete(lost, id)
	}
	for _, w := range c.rows {
		if lost[w.row.ID] {
			w.gone = true
		}
	}
}
