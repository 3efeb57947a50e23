package service

import (
	"context"
	"errors"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
)

// ErrErasureNotConfigured: no erasure key is set (ENRICHQ_ERASURE_KEY), so
// no keyed hash can be made; nothing was done.
var ErrErasureNotConfigured = errors.New("erasures need ENRICHQ_ERASURE_KEY (the key of the suppression list's hashes); none is set")

// ErasureRequest names the person to erase: an email, a profile URL, or a
// name with a company or a domain.
type ErasureRequest struct {
	Email      string `json:"email"`
	ProfileURL string `json:"profile_url"`
	Name       string `json:"name"`
	Company    string `json:"company"`
	Domain     string `json:"domain"`
}

// Erasure is an erasure's receipt: rows removed (or rewritten, for the
// ledger) by table, and whether its suppression was lifted.
type Erasure = store.Erasure

// Erase removes every stored trace of one person of the tenant in one
// transaction and puts the person on the suppression list (scope admin).
// See store.Erase and docs/personal-data.md.
func (s *Service) Erase(ctx context.Context, p Principal, req ErasureRequest) (Erasure, error) {
	if err := p.Require(domain.ScopeAdmin); err != nil {
		return Erasure{}, err
	}
	if p.Tenant == "" {
		return Erasure{}, ErrNoTenant
	}
	if len(s.erasureKey) == 0 {
		return Erasure{}, ErrErasureNotConfigured
	}
	person, err := personOf(req)
	if err != nil {
		return Erasure{}, err
	}
	return s.store.Erase(ctx, store.EraseRequest{Tenant: p.Tenant, KeyID: p.KeyID, Person: person, Keys: jobs.PersonKeys,
		Hash: func(v string) []byte { return jobs.KeyedHash(s.erasureKey, v) }})
}

// personOf checks that req names one person in one of the four ways and
// returns it in canonical form.
func personOf(req ErasureRequest) (store.Person, error) {
	const want = `name the person by "email", by "profile_url", or by "name" with "company" or "domain"`
	trim := func(v string) string { return strings.TrimSpace(v) }
	p := store.Person{Email: trim(req.Email), ProfileURL: trim(req.ProfileURL), Name: trim(req.Name), Company: trim(req.Company), Domain: trim(req.Domain)}
	var err error
	if p.Email != "" {
		if p.Email, err = ingest.CanonicalEmail(p.Email); err != nil {
			return store.Person{}, invalidParam("email", "email: %v", err)
		}
	}
	if p.ProfileURL != "" {
		if p.ProfileURL, err = ingest.CanonicalProfileURL(p.ProfileURL); err != nil {
			return store.Person{}, invalidParam("profile_url", "profile_url: %v", err)
		}
	}
	if p.Domain != "" {
		if p.Domain, err = ingest.CanonicalDomain(p.Domain); err != nil {
			return store.Person{}, invalidParam("domain", "domain: %v", err)
		}
	}
	if p.Identity() == "" {
		field := "email"
		switch {
		case p.Name != "" && p.Company == "" && p.Domain == "":
			field = "company"
		case p.Name == "" && (p.Company != "" || p.Domain != ""):
			field = "name"
		}
		return store.Person{}, invalidParam(field, "%s (one way only)", want)
	}
	return p, nil
}

// Erasures lists the tenant's erasures, newest first (scope admin).
func (s *Service) Erasures(ctx context.Context, p Principal) ([]Erasure, error) {
	if err := p.Require(domain.ScopeAdmin); err != nil {
		return nil, err
	}
	return s.store.Erasures(ctx, p.Tenant)
}

// LiftErasure lifts the suppression of the tenant's erasure id (scope
// admin): later uploads of the person are looked up again.
func (s *Service) LiftErasure(ctx context.Context, p Principal, id string) (_ Erasure, err error) {
	defer func() { err = notFound("erasure", err) }()
	if err := p.Require(domain.ScopeAdmin); err != nil {
		return Erasure{}, err
	}
	return s.store.LiftErasure(ctx, p.Tenant, p.KeyID, id)
}
