package jobs

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/store"
)

// KeyedHash is the keyed hash (HMAC-SHA256 under the erasure key) that
// stands for a person's input wherever the plain value may not stay: the
// suppression list, the credit ledger of an erased person. Without the key,
// a dump of the database cannot be searched for a guessed email.
func KeyedHash(key []byte, v string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(v))
	return m.Sum(nil)
}

// PersonKeys are the normalised inputs that stand for the person of an
// erased row: cache, the lookup_cache keys of their answers (every stage);
// suppress, the inputs a later upload of the person would be looked up by.
// Both hold the row's own input, a company and role title too: that query
// found the person, and asked again it would buy them again.
func PersonKeys(r store.ErasedRow) (cache, suppress []string) {
	row := store.Row{Kind: r.Kind, ProfileURL: r.ProfileURL, Name: r.Name, Company: r.Company, Domain: r.Domain, Email: r.Email}
	in := cacheKey(domain.StageProfile, row)
	cache = append(cache, in)
	suppress = append(suppress, in)
	found := []string{}
	if r.FoundProfileURL != "" {
		found = append(found, "url:"+r.FoundProfileURL)
	}
	if r.FoundEmail != "" {
		found = append(found, "email:"+strings.ToLower(strings.TrimSpace(r.FoundEmail)))
	}
	if r.FoundName != "" && r.FoundComp != "" {
		found = append(found, "nc:"+normName(r.FoundName)+"|"+normName(r.FoundComp))
	}
	return append(cache, found...), append(suppress, found...)
}

// UploadPersonKeys are the normalised inputs that name the person of an
// upload's lookup, in the form of the suppression list's keys (PersonKeys):
// its profile URL, its email, its name with its company and with its
// domain. A lookup of a role title at a company names nobody: none. An
// erasure finds a stored upload by them (store.UploadFile.PersonHashes).
func UploadPersonKeys(l ingest.Lookup) []string {
	var keys []string
	if l.ProfileURL != "" {
		keys = append(keys, cacheKey(domain.StageProfile, store.Row{Kind: domain.InputProfileURL, ProfileURL: l.ProfileURL}))
	}
	if l.Email != "" {
		keys = append(keys, cacheKey(domain.StageProfile, store.Row{Kind: domain.InputEmail, Email: l.Email}))
	}
	if l.Name == "" || l.Role != "" && l.Name == l.Role {
		return keys
	}
	if l.Company != "" {
		keys = append(keys, cacheKey(domain.StageProfile, store.Row{Kind: domain.InputNameCompany, Name: l.Name, Company: l.Company}))
	}
	if l.Domain != "" {
		keys = append(keys, cacheKey(domain.StageProfile, store.Row{Kind: domain.InputNameDomain, Name: l.Name, Domain: l.Domain}))
	}
	return keys
}

// Suppressor returns what marks a lookup of a suppressed person of tenant
// skipped, by the suppression list hashed under key (nil when the tenant
// has no suppression, or key is empty: no erasure can have been made).
func Suppressor(ctx context.Context, st *store.Store, key []byte, tenant string) (func(ingest.Lookup) string, error) {
	if len(key) == 0 {
		return nil, nil
	}
	list, err := st.Suppressions(ctx, tenant)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return func(l ingest.Lookup) string {
		if at, ok := list[string(KeyedHash(key, LookupKey(l)))]; ok {
			return SuppressedReason(at)
		}
		return ""
	}, nil
}

// SuppressedReason is the state_reason of a row skipped for its person's erasure.
func SuppressedReason(erasedAt time.Time) string {
	return "suppressed: erased on " + erasedAt.UTC().Format(time.DateOnly)
}
