package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

// Keys finds who holds an API key.
type Keys interface {
	// Principal returns the key's tenant, id and scopes, or ok=false for an
	// unknown key. An error means the lookup itself failed (the key store
	// is unreachable).
	Principal(ctx context.Context, key string) (p service.Principal, ok bool, err error)
	// KeyLive reports whether tenant's key of id keyID (a Principal's
	// KeyID) is still known and not revoked: a web session opened with a
	// key lives no longer than the key (internal/web).
	KeyLive(ctx context.Context, tenant, keyID string) (bool, error)
}

// StaticKeys are API keys known at start (ENRICHQ_API_KEYS); each holds
// every scope. Keys are held as SHA-256 digests: a lookup hashes the
// presented key, so its time does not depend on how much of a real key it
// shares.
type StaticKeys struct {
	byDigest map[[sha256.Size]byte]string
	ids      map[staticKeyID]bool // the keys' (tenant, KeyID)
}

type staticKeyID struct{ tenant, id string }

// NewStaticKeys builds StaticKeys from a key → tenant map (config.APIKeys).
func NewStaticKeys(keyToTenant map[string]string) *StaticKeys {
	k := &StaticKeys{byDigest: make(map[[sha256.Size]byte]string, len(keyToTenant)), ids: map[staticKeyID]bool{}}
	for key, tenant := range keyToTenant {
		d := sha256.Sum256([]byte(key))
		k.byDigest[d] = tenant
		if tenant != "" {
			k.ids[staticKeyID{tenant, staticKeyIDOf(d)}] = true
		}
	}
	return k
}

// staticKeyIDOf is the KeyID of a key of digest d: "env:" and the first 8
// hex digits of its SHA-256.
func staticKeyIDOf(d [sha256.Size]byte) string { return "env:" + hex.EncodeToString(d[:4]) }

// IsStaticKeyID is true for the KeyID of a key of ENRICHQ_API_KEYS.
func IsStaticKeyID(keyID string) bool { return strings.HasPrefix(keyID, "env:") }

// Len is the number of keys.
func (k *StaticKeys) Len() int { return len(k.byDigest) }

// Principal implements Keys. A key of an empty tenant is unknown. Its
// KeyID is "env:" and the first 8 hex digits of its SHA-256.
func (k *StaticKeys) Principal(_ context.Context, key string) (service.Principal, bool, error) {
	d := sha256.Sum256([]byte(key))
	tenant, ok := k.byDigest[d]
	if !ok || tenant == "" {
		return service.Principal{}, false, nil
	}
	return service.Principal{Tenant: tenant, KeyID: staticKeyIDOf(d), Scopes: domain.Scopes}, true, nil
}

// KeyLive implements Keys: a key is live while it is among the keys (a key
// removed from ENRICHQ_API_KEYS is gone at the next start).
func (k *StaticKeys) KeyLive(_ context.Context, tenant, keyID string) (bool, error) {
	return k.ids[staticKeyID{tenant, keyID}], nil
}

// bearerToken returns the token of an "Authorization: Bearer <token>" header.
func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

type principalKey struct{}

// principalFrom returns the principal authenticate put in the context.
func principalFrom(ctx context.Context) service.Principal {
	p, _ := ctx.Value(principalKey{}).(service.Principal)
	return p
}

// tenantFrom returns the tenant of the principal authenticate put in the context.
func tenantFrom(ctx context.Context) string { return principalFrom(ctx).Tenant }

// authenticate lets a request through to next with its principal in the
// context, or answers 401 with WWW-Authenticate: Bearer; a key without
// scope gets a 403 insufficient_scope (the service checks the scope again).
// Scope "" lets any known key through (/mcp: the tools follow the scopes).
func (s *server) authenticate(scope domain.Scope, next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			s.writeError(w, r, errUnauthorized("missing bearer token: send Authorization: Bearer <API key>"))
			return
		}
		p, ok, err := s.Keys.Principal(r.Context(), token)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if !ok {
			s.writeError(w, r, errUnauthorized("unknown API key"))
			return
		}
		if info := infoFrom(r.Context()); info != nil {
			info.tenant = p.Tenant
		}
		if scope != "" {
			if err := p.Require(scope); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		if !s.checkRoute(w, r) {
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}
