package service

import "context"

// KeyPrincipal is the principal of a stored API key (created with `api keys
// create`): its tenant, id, scopes and MCP ceilings; ok is false for a key
// unknown or revoked. A door authenticates with it; no scope is needed.
func (s *Service) KeyPrincipal(ctx context.Context, key string) (p Principal, ok bool, err error) {
	ak, ok, err := s.store.LiveAPIKey(ctx, key)
	if err != nil || !ok {
		return Principal{}, false, err
	}
	return Principal{Tenant: ak.Tenant, KeyID: ak.ID, Scopes: ak.Scopes, MCPMaxBudget: ak.MCPMaxBudget,
		MCPMaxDailyBudget: ak.MCPMaxDailyBudget}, true, nil
}

// StoredKeyLive says whether tenant's stored key of id keyID is still there
// and not revoked.
func (s *Service) StoredKeyLive(ctx context.Context, tenant, keyID string) (bool, error) {
	return s.store.APIKeyLive(ctx, tenant, keyID)
}
