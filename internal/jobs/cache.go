package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// fromCache serves rows whose answer we already hold (newer than the job's
// max_age) and returns the rows still to look up.
func (c *chunkRun) fromCache(ctx context.Context, stage domain.Stage, todo []*rowWork) []*rowWork {
	if c.job.MaxAge <= 0 {
		return todo
	}
	keys := make([]string, 0, len(todo))
	for _, w := range todo {
		keys = append(keys, cacheKey(stage, w.rowWithFound()))
	}
	hits, err := c.p.store.CachedAnswers(ctx, c.job.Tenant, stage, keys, c.p.cfg.Now().Add(-c.job.MaxAge))
	if err != nil {
		c.p.log.Warn("cache lookup failed; calling the vendor", "err", err)
		return todo
	}
	var rest []*rowWork
	for i, w := range todo {
		hit, ok := hits[keys[i]]
		if !ok {
			rest = append(rest, w)
			continue
		}
		ans, err := decodeCached(stage, hit)
		if err != nil {
			rest = append(rest, w)
			continue
		}
		w.out.Prov = store.Provenance{Source: "vendor", FromCache: true, FetchedAt: hit.FetchedAt}
		c.apply(w, stage, ans, false)
	}
	return rest
}

// remember adds a row's answer of stage to the answers the next save
// writes to the cache. A matched answer without the vendor's raw record is
// not cached.
func (c *chunkRun) remember(w *rowWork, stage domain.Stage, a answer, now time.Time) {
	key := cacheKey(stage, w.rowWithFound())
	if stage == domain.StageProfile {
		key = cacheKey(stage, w.row)
	}
	entry := store.CacheEntry{RowID: w.row.ID, Stage: stage, Key: key, Matched: a.matched(stage), FetchedAt: now}
	if entry.Matched {
		entry.Result = encodeCached(stage, a)
	}
	if !entry.Matched || entry.Result != nil {
		c.cacheMu.Lock()
		c.cache = append(c.cache, entry)
		c.cacheMu.Unlock()
	}
}

// A paid answer is kept in lookup_cache.result as {"raw": <the stage's Raw>}:
// the answer as the vendor sent it, parsed again when it is reused (half the
// bytes of a typed encoding, and no encoding: that took 6 % of the worker's
// CPU in the ceiling benchmark).
type cachedRaw struct {
	Raw json.RawMessage `json:"raw"`
}

// stageRaw is the vendor's record of a stage's answer.
func stageRaw(stage domain.Stage, a answer) json.RawMessage {
	switch stage {
	case domain.StageProfile:
		return a.profile.Raw
	case domain.StageEmail:
		return a.email.Raw
	default:
		return a.phones.Raw
	}
}

// encodeCached is the lookup_cache.result of a stage's matched answer, nil
// when the answer has no raw record (not the vendor's): such an answer is
// not cached.
func encodeCached(stage domain.Stage, a answer) []byte {
	raw := stageRaw(stage, a)
	if len(raw) == 0 {
		return nil
	}
	b := make([]byte, 0, len(raw)+8) // raw is valid JSON (see enrich.Profile)
	b = append(b, `{"raw":`...)
	b = append(b, raw...)
	return append(b, '}')
}

// EncodeCachedAnswer is the lookup_cache.result a worker writes for a
// matched answer of stage (profile, email or phone): for a benchmark that
// writes what the worker writes without the worker.
func EncodeCachedAnswer(stage domain.Stage, profile *enrich.Profile, email *enrich.Email, phones *enrich.Phones) []byte {
	return encodeCached(stage, answer{profile: profile, email: email, phones: phones})
}

// CachedProfileURL is the profile URL of a cached profile answer; "" for a
// miss or an entry that cannot be read.
func CachedProfileURL(e store.CacheEntry) string {
	if a, err := decodeCached(domain.StageProfile, e); err == nil && a.profile != nil {
		return a.profile.ProfileURL
	}
	return ""
}

// decodeCached reads a cached answer of stage. An entry it cannot read is
// an error: the caller treats it as a miss and buys the answer again.
func decodeCached(stage domain.Stage, e store.CacheEntry) (answer, error) {
	if !e.Matched {
		return answer{}, nil
	}
	var c cachedRaw
	if err := json.Unmarshal(e.Result, &c); err != nil {
		return answer{}, fmt.Errorf("cached %s answer: %w", stage, err)
	}
	if len(c.Raw) == 0 || string(c.Raw) == "null" {
		return answer{}, fmt.Errorf("cached %s answer has no raw record", stage)
	}
	var a answer
	var err error
	switch stage {
	case domain.StageProfile:
		a.profile, err = enrich.ParseProfileRaw(c.Raw)
	case domain.StageEmail:
		a.email, err = enrich.ParseEmailRaw(c.Raw)
	default:
		a.phones, err = enrich.ParsePhonesRaw(c.Raw)
	}
	if err != nil {
		return answer{}, fmt.Errorf("cached %s answer: %w", stage, err)
	}
	if !a.matched(stage) {
		return answer{}, fmt.Errorf("cached %s answer is empty", stage)
	}
	return a, nil
}
