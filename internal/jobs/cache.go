package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// fromCache serves rows whose answer we already hold (newer than the job's
// max_age) and returns the rows still to look up. A found answer is shared
// by every vendor (it was paid for once: never bought again); a no-match
// is one vendor's (noMatchKey): it only keeps that vendor out of the row's
// waterfall, and the row is no_match from the cache only when every vendor
// that can answer it said no.
func (c *chunkRun) fromCache(ctx context.Context, stage domain.Stage, todo []*rowWork) []*rowWork {
	if c.job.MaxAge <= 0 {
		return todo
	}
	keys := make([]string, 0, len(todo))
	nmKeys := make([][]string, len(todo))
	for i, w := range todo {
		k := cacheKey(stage, w.rowWithFound())
		keys = append(keys, k)
		for _, l := range c.capable(w, stage) {
			if nk := c.p.noMatchKey(l.name, k); nk != k {
				nmKeys[i] = append(nmKeys[i], nk)
			}
		}
	}
	all := slices.Clone(keys)
	for _, ks := range nmKeys {
		all = append(all, ks...)
	}
	hits, err := c.p.store.CachedAnswers(ctx, c.job.Tenant, stage, all, c.p.cfg.Now().Add(-c.job.MaxAge))
	if err != nil {
		c.p.log.Warn("cache lookup failed; calling the vendor", "err", err)
		return todo
	}
	var rest []*rowWork
	for i, w := range todo {
		hit, ok := hits[keys[i]]
		if ok && hit.Matched {
			// With verify asked, an answer from a vendor whose address the
			// row rejected as invalid is not served again.
			if ans, err := decodeCached(stage, hit); err == nil && !(c.verifies() && w.tried[stage][sourceOf(ans.vendor)]) {
				w.out.Prov = store.Provenance{Source: sourceOf(ans.vendor), FromCache: true, FetchedAt: hit.FetchedAt}
				c.apply(w, stage, ans, false)
				continue
			}
		}
		// The vendors that said no before (the default vendor's no-match is
		// under the plain key).
		var lastAt time.Time
		for _, l := range c.capable(w, stage) {
			e, ok := hits[c.p.noMatchKey(l.name, keys[i])]
			if !ok || e.Matched || w.tried[stage][l.name] {
				continue
			}
			c.noMatchFrom(l, w, stage, false)
			lastAt = e.FetchedAt
		}
		if lastAt.IsZero() || c.nextVendor(w, stage) != nil || len(w.skipped) > 0 {
			rest = append(rest, w)
			continue
		}
		w.out.Prov = store.Provenance{Source: sourceOf(w.lastNo[stage]), FromCache: true, FetchedAt: lastAt}
		c.apply(w, stage, answer{vendor: w.lastNo[stage]}, false)
	}
	return rest
}

// noMatchKey is the cache key of vendor's no-match for an input of key: a
// no-match is one vendor's, kept apart from the found answers (a no-match
// never replaces an answer paid for at another vendor). With the one
// default vendor alone it is the input's own key, as it always was.
func (p *Processor) noMatchKey(vendor, key string) string {
	if len(p.lanes) == 1 && vendor == DefaultVendorName {
		return key
	}
	return "nm:" + vendor + "|" + key
}

// remember adds a row's found answer of stage to the answers the next save
// writes to the cache. A matched answer without the vendor's raw record is
// not cached.
func (c *chunkRun) remember(w *rowWork, stage domain.Stage, a answer, now time.Time) {
	if !a.matched(stage) {
		return
	}
	entry := store.CacheEntry{RowID: w.row.ID, Stage: stage, Key: c.rememberKey(w, stage), Matched: true, FetchedAt: now,
		Result: encodeCached(stage, a, c.p.kindOf(a.vendor))}
	if entry.Result != nil {
		c.cacheMu.Lock()
		c.cache = append(c.cache, entry)
		c.cacheMu.Unlock()
	}
}

// rememberNoMatch adds vendor's no-match of stage for the row to the
// answers the next save writes to the cache.
func (c *chunkRun) rememberNoMatch(w *rowWork, stage domain.Stage, vendor string, now time.Time) {
	entry := store.CacheEntry{RowID: w.row.ID, Stage: stage, Key: c.p.noMatchKey(vendor, c.rememberKey(w, stage)), FetchedAt: now}
	c.cacheMu.Lock()
	c.cache = append(c.cache, entry)
	c.cacheMu.Unlock()
}

func (c *chunkRun) rememberKey(w *rowWork, stage domain.Stage) string {
	if stage == domain.StageProfile {
		return cacheKey(stage, w.row)
	}
	return cacheKey(stage, w.rowWithFound())
}

// A paid answer is kept in lookup_cache.result as {"raw": <the stage's Raw>}:
// the answer as the vendor sent it, parsed again when it is reused (half the
// bytes of a typed encoding, and no encoding: that took 6 % of the worker's
// CPU in the ceiling benchmark). Another vendor than the default one adds
// its name and its kind (whose parser reads its profile record back).
type cachedRaw struct {
	Raw    json.RawMessage `json:"raw"`
	Vendor string          `json:"vendor,omitempty"`
	Kind   string          `json:"kind,omitempty"`
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
func encodeCached(stage domain.Stage, a answer, kind string) []byte {
	raw := stageRaw(stage, a)
	if len(raw) == 0 {
		return nil
	}
	b := make([]byte, 0, len(raw)+8) // raw is valid JSON (see enrich.Profile)
	b = append(b, `{"raw":`...)
	b = append(b, raw...)
	if a.vendor != "" && a.vendor != DefaultVendorName {
		// Names are [a-z0-9_-] (config), kinds a fixed word: no escaping.
		b = append(b, `,"vendor":"`...)
		b = append(b, a.vendor...)
		b = append(b, `","kind":"`...)
		b = append(b, kind...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// EncodeCachedAnswer is the lookup_cache.result a worker writes for a
// matched answer of stage (profile, email or phone): for a benchmark that
// writes what the worker writes without the worker.
func EncodeCachedAnswer(stage domain.Stage, profile *enrich.Profile, email *enrich.Email, phones *enrich.Phones) []byte {
	return encodeCached(stage, answer{profile: profile, email: email, phones: phones}, "")
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
	a := answer{vendor: c.Vendor}
	var err error
	switch stage {
	case domain.StageProfile:
		a.profile, err = enrich.ReadProfileRecord(c.Kind, c.Raw)
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
