package store

import (
	"context"
	"time"
)

// TenantUsage is a tenant's credits in one calendar month (UTC).
type TenantUsage struct {
	Month           time.Time // its first day
	Reserved, Spent int64
}

// TenantMonth returns the tenant's credits in the month of at (UTC).
func (s *Store) TenantMonth(ctx context.Context, tenant string, at time.Time) (TenantUsage, error) {
	if err := needTenant(tenant); err != nil {
		return TenantUsage{}, err
	}
	u := TenantUsage{Month: time.Date(at.UTC().Year(), at.UTC().Month(), 1, 0, 0, 0, 0, time.UTC)}
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(reserved), 0), coalesce(sum(spent), 0) FROM tenant_usage
		WHERE tenant = $1 AND month = $2::date`, tenant, u.Month).Scan(&u.Reserved, &u.Spent)
	return u, interpretError(err)
}
