package httpapi

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
)

// Keys finds the tenant of an API key.
type Keys interface {
	// Tenant returns the key's tenant, or ok=false for an unknown key. An
	// error means the lookup itself failed (the key store is unreachable).
	Tenant(ctx context.Context, key string) (tenant string, ok bool, err error)
}

// StaticKeys are API keys known at start (ENRICHQ_API_KEYS). Keys are held
// as SHA-256 digests: a lookup hashes the presented key, so its time does not
// depend on how much of a real key it shares.
type StaticKeys struct {
	byDigest map[[sha256.Size]byte]string
}

// NewStaticKeys builds StaticKeys from a key → tenant map (config.APIKeys).
func NewStaticKeys(keyToTenant map[string]string) *StaticKeys {
	k := &StaticKeys{byDigest: make(map[[sha256.Size]byte]string, len(keyToTenant))}
	for key, tenant := range keyToTenant {
		k.byDigest[sha256.Sum256([]byte(key))] = tenant
	}
	return k
}

// Len is the number of keys.
func (k *StaticKeys) Len() int { return len(k.byDigest) }

// Tenant implements Keys.
func (k *StaticKeys) Tenant(_ context.Context, key string) (string, bool, error) {
	d := sha256.Sum256([]byte(key))
	tenant, ok := k.byDigest[d]
	return tenant, ok && tenant != "", nil
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

type tenantKey struct{}

// tenantFrom returns the tenant authenticate put in the context.
func tenantFrom(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// authenticate lets a request through to next with its tenant in the
// context, or answers 401 with WWW-Authenticate: Bearer.
func (s *server) authenticate(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			s.writeError(w, r, errUnauthorized("missing bearer token: send Authorization: Bearer <API key>"))
			return
		}
		tenant, ok, err := s.Keys.Tenant(r.Context(), token)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if !ok {
			s.writeError(w, r, errUnauthorized("unknown API key"))
			return
		}
		if info := infoFrom(r.Context()); info != nil {
			info.tenant = tenant
		}
		next(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	})
}
