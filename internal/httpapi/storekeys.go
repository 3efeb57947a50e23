package httpapi

import (
	"context"

	"github.com/enrichq/enrichq/internal/store"
)

// StoreKeys looks keys up in Postgres (created with `api keys create`), after
// the bootstrap keys of ENRICHQ_API_KEYS.
type StoreKeys struct {
	Bootstrap *StaticKeys // may be nil
	Store     *store.Store
}

// Tenant implements Keys.
func (k StoreKeys) Tenant(ctx context.Context, key string) (string, bool, error) {
	if k.Bootstrap != nil {
		if t, ok, _ := k.Bootstrap.Tenant(ctx, key); ok {
			return t, true, nil
		}
	}
	return k.Store.TenantForKey(ctx, key)
}
