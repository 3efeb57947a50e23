package httpapi

import (
	"context"

	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
)

// StoreKeys looks keys up in Postgres (created with `api keys create`), after
// the bootstrap keys of ENRICHQ_API_KEYS.
type StoreKeys struct {
	Bootstrap *StaticKeys // may be nil
	Store     *store.Store
}

// Principal implements Keys: a stored key holds the scopes it was created with.
func (k StoreKeys) Principal(ctx context.Context, key string) (service.Principal, bool, error) {
	if k.Bootstrap != nil {
		if p, ok, _ := k.Bootstrap.Principal(ctx, key); ok {
			return p, true, nil
		}
	}
	ak, ok, err := k.Store.LiveAPIKey(ctx, key)
	if err != nil || !ok {
		return service.Principal{}, false, err
	}
	return service.Principal{Tenant: ak.Tenant, KeyID: ak.ID, Scopes: ak.Scopes, MCPMaxBudget: ak.MCPMaxBudget}, true, nil
}
