package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/store"
)

// profileQuery is the vendor query of a row's profile stage.
func profileQuery(r store.Row) enrich.ProfileQuery {
	switch r.Kind {
	case domain.InputProfileURL:
		return enrich.ProfileQuery{ProfileURL: r.ProfileURL}
	case domain.InputEmail:
		return enrich.ProfileQuery{Email: r.Email}
	case domain.InputNameDomain:
		return enrich.ProfileQuery{Name: r.Name, Domain: r.Domain}
	default:
		return enrich.ProfileQuery{Name: r.Name, Company: r.Company}
	}
}

// cacheKey is the normalised input of a lookup: the same key means the same
// question to the vendor, whose answer we never buy twice.
func cacheKey(stage domain.Stage, r store.Row) string {
	if stage != domain.StageProfile && r.FoundProfileURL != "" {
		return "url:" + r.FoundProfileURL
	}
	// The profile stage, or a later one asked of the row's own input (by a
	// vendor that needs no profile, the row's profile not found).
	switch r.Kind {
	case domain.InputProfileURL:
		return "url:" + r.ProfileURL
	case domain.InputEmail:
		return "email:" + strings.ToLower(strings.TrimSpace(r.Email))
	case domain.InputNameDomain:
		return "nd:" + normName(r.Name) + "|" + strings.ToLower(strings.TrimSpace(r.Domain)) // ingest made it canonical
	default:
		return "nc:" + normName(r.Name) + "|" + normName(r.Company)
	}
}

// LookupKey is the cache key of an upload's lookup: the profile question
// it asks the vendor.
func LookupKey(l ingest.Lookup) string {
	return cacheKey(domain.StageProfile, store.Row{Kind: l.Kind, ProfileURL: l.ProfileURL, Name: l.Name, Company: l.Company,
		Domain: l.Domain, Email: l.Email})
}

// DistinctLookups counts the distinct profile questions among lookups: the
// ones the vendor is asked once however often they repeat. It keeps a 64-bit
// hash per lookup in a slice, sorted when counted: a million lookups cost 8
// MB, and a collision among them is beyond likely.
type DistinctLookups struct {
	seed   maphash.Seed
	hashes []uint64
	sorted int // hashes[:sorted] are sorted and unique
}

// Add counts l.
func (d *DistinctLookups) Add(l ingest.Lookup) {
	if d.hashes == nil {
		d.seed = maphash.MakeSeed()
	}
	d.hashes = append(d.hashes, maphash.String(d.seed, LookupKey(l)))
}

// Len is the number of distinct questions added.
func (d *DistinctLookups) Len() int {
	if d.sorted < len(d.hashes) {
		slices.Sort(d.hashes)
		d.hashes = slices.Compact(d.hashes)
		d.sorted = len(d.hashes)
	}
	return len(d.hashes)
}

func normName(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// idempotencyKey is stable across retries of the same call, so a retry after
// a timeout is replayed (and not billed) by a vendor that honours it.
func idempotencyKey(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%v\x00", p)
	}
	return "enrichq-" + hex.EncodeToString(h.Sum(nil))[:40]
}

func bulkIdempotencyKey(jobID string, keys []string, include []domain.Stage) string {
	k := append([]string(nil), keys...)
	sort.Strings(k)
	inc := make([]string, len(include))
	for i, s := range include {
		inc[i] = string(s)
	}
	return idempotencyKey("bulk", jobID, strings.Join(k, "\x01"), strings.Join(inc, ","))
}
