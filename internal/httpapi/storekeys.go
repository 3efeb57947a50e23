package httpapi

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/service"
)

// StoreKeys looks keys up in Postgres (created with `api keys create`), after
// the bootstrap keys of ENRICHQ_API_KEYS. Unknown keys are remembered for a
// while (unknownKeys), so a client sending made-up bearers costs no query
// each.
type StoreKeys struct {
	Bootstrap *StaticKeys // may be nil
	Service   *service.Service
	unknown   *unknownKeys
}

// Defaults of the cache of unknown keys.
const (
	// unknownKeyTTL is how long a key found unknown is answered 401 without
	// a query. A key is made random (`api keys create`): one found unknown
	// is never created later.
	unknownKeyTTL = time.Minute
	// unknownKeysMax bounds the cache: past it, the entries of the oldest
	// half go.
	unknownKeysMax = 10_000
)

// NewStoreKeys returns StoreKeys with a cache of unknown keys.
func NewStoreKeys(bootstrap *StaticKeys, svc *service.Service) *StoreKeys {
	return &StoreKeys{Bootstrap: bootstrap, Service: svc, unknown: newUnknownKeys(unknownKeysMax, unknownKeyTTL, time.Now)}
}

// Principal implements Keys: a stored key holds the scopes it was created with.
func (k *StoreKeys) Principal(ctx context.Context, key string) (service.Principal, bool, error) {
	if k.Bootstrap != nil {
		if p, ok, _ := k.Bootstrap.Principal(ctx, key); ok {
			return p, true, nil
		}
	}
	d := sha256.Sum256([]byte(key))
	if k.unknown.has(d) {
		return service.Principal{}, false, nil
	}
	p, ok, err := k.Service.KeyPrincipal(ctx, key)
	if err != nil {
		return service.Principal{}, false, err
	}
	if !ok {
		k.unknown.add(d)
		return service.Principal{}, false, nil
	}
	return p, true, nil
}

// KeyLive implements Keys: a bootstrap key while it is among them, a
// stored one while it is not revoked (one lookup by its id).
func (k *StoreKeys) KeyLive(ctx context.Context, tenant, keyID string) (bool, error) {
	if IsStaticKeyID(keyID) {
		if k.Bootstrap == nil {
			return false, nil
		}
		return k.Bootstrap.KeyLive(ctx, tenant, keyID)
	}
	return k.Service.StoredKeyLive(ctx, tenant, keyID)
}

// unknownKeys remembers digests of keys found unknown until their expiry;
// at most max of them. A nil *unknownKeys remembers nothing. Revoked keys
// are found unknown too: they stay refused.
type unknownKeys struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	now   func() time.Time
	until map[[sha256.Size]byte]time.Time
	order [][sha256.Size]byte // insertion order, for eviction
}

func newUnknownKeys(max int, ttl time.Duration, now func() time.Time) *unknownKeys {
	return &unknownKeys{max: max, ttl: ttl, now: now, until: map[[sha256.Size]byte]time.Time{}}
}

func (u *unknownKeys) has(d [sha256.Size]byte) bool {
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	until, ok := u.until[d]
	return ok && u.now().Before(until)
}

func (u *unknownKeys) add(d [sha256.Size]byte) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.until[d]; !ok {
		if len(u.order) >= u.max {
			// Drop the oldest half in one go, so eviction is rare.
			drop := len(u.order) - u.max/2
			for _, old := range u.order[:drop] {
				delete(u.until, old)
			}
			u.order = append(u.order[:0], u.order[drop:]...)
		}
		u.order = append(u.order, d)
	}
	u.until[d] = u.now().Add(u.ttl)
}

// len is the number of digests held.
func (u *unknownKeys) len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.until)
}
