package store

import (
	"context"
	"strings"
	"time"
)

// Tenant is one customer of the service: its jobs, keys, cache and feed are
// its own. Its id is the name API keys carry; never empty.
type Tenant struct {
	ID        string
	CreatedAt time.Time
}

// EnsureTenant returns the tenant id, creating it if it does not exist yet
// (a key's creation, and the tenants of ENRICHQ_API_KEYS at the API's start).
func (s *Store) EnsureTenant(ctx context.Context, id string) (Tenant, error) {
	id = strings.TrimSpace(id)
	if err := needTenant(id); err != nil {
		return Tenant{}, err
	}
	t := Tenant{ID: id}
	// The no-op update makes RETURNING answer for an existing tenant too.
	err := s.pool.QueryRow(ctx, `INSERT INTO tenants (id) VALUES ($1)
		ON CONFLICT (id) DO UPDATE SET id = excluded.id RETURNING created_at`, id).Scan(&t.CreatedAt)
	return t, interpretError(err)
}

// GetTenant returns a tenant; ErrNotFound when there is none of that id.
func (s *Store) GetTenant(ctx context.Context, id string) (Tenant, error) {
	if err := needTenant(id); err != nil {
		return Tenant{}, err
	}
	t := Tenant{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT created_at FROM tenants WHERE id = $1`, id).Scan(&t.CreatedAt)
	return t, interpretError(err)
}
