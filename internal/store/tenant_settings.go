package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Defaults of a new tenant's limits (the columns' defaults in
// migrations/00001_schema.sql, "Tenants"; docs/money.md).
const (
	DefaultJobBudget        int64 = 10_000
	DefaultMonthlyAllowance int64 = 100_000
)

// TenantSettings are a tenant's limits and when its webhook secret was
// last made (never the secret: it is shown once, when made).
type TenantSettings struct {
	Tenant string
	// DefaultJobBudget is the budget of a job submitted without one; nil: none.
	DefaultJobBudget *int64
	// MonthlyAllowance caps the tenant's credits per calendar month (UTC),
	// across its jobs; nil: no cap.
	MonthlyAllowance       *int64
	WebhookSecretRotatedAt time.Time
	// Retention is how long the tenant's rows, results, markers, cache
	// entries and feed lines are kept (retention_purge.go); nil: until erased.
	Retention *time.Duration
}

// GetTenantSettings returns a tenant's settings; ErrNotFound when there is
// no such tenant.
func (s *Store) GetTenantSettings(ctx context.Context, tenant string) (TenantSettings, error) {
	if err := needTenant(tenant); err != nil {
		return TenantSettings{}, err
	}
	t := TenantSettings{Tenant: tenant}
	var retention *int64
	err := s.pool.QueryRow(ctx, `SELECT default_job_budget, monthly_allowance, webhook_secret_rotated_at, retention_seconds FROM tenants WHERE id = $1`, tenant).
		Scan(&t.DefaultJobBudget, &t.MonthlyAllowance, &t.WebhookSecretRotatedAt, &retention)
	if retention != nil {
		d := time.Duration(*retention) * time.Second
		t.Retention = &d
	}
	return t, interpretError(err)
}

// Limit is a change of one limit: Set false leaves it; Set with a nil Value
// removes it.
type Limit struct {
	Set   bool
	Value *int64
}

// TenantLimits changes a tenant's limits.
type TenantLimits struct {
	DefaultJobBudget Limit
	MonthlyAllowance Limit
}

// UpdateTenantLimits changes a tenant's limits and returns its settings.
// Jobs paused by an allowance resume when the tenant's allowance is raised
// or removed: if the allowance (theirs or the vendor key's) is still spent,
// their next reservation pauses them again, before any call.
func (s *Store) UpdateTenantLimits(ctx context.Context, tenant string, l TenantLimits) (TenantSettings, error) {
	if err := needTenant(tenant); err != nil {
		return TenantSettings{}, err
	}
	for _, v := range []Limit{l.DefaultJobBudget, l.MonthlyAllowance} {
		if v.Set && v.Value != nil && *v.Value < 0 {
			return TenantSettings{}, fmt.Errorf("store: a tenant's limit must be >= 0, got %d", *v.Value)
		}
	}
	before, err := s.GetTenantSettings(ctx, tenant)
	if err != nil {
		return TenantSettings{}, err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE tenants SET
			default_job_budget = CASE WHEN @set_budget THEN @budget ELSE default_job_budget END,
			monthly_allowance = CASE WHEN @set_allowance THEN @allowance ELSE monthly_allowance END
		WHERE id = @tenant`,
		pgx.StrictNamedArgs{"tenant": tenant, "set_budget": l.DefaultJobBudget.Set, "budget": l.DefaultJobBudget.Value,
			"set_allowance": l.MonthlyAllowance.Set, "allowance": l.MonthlyAllowance.Value})
	if err != nil {
		return TenantSettings{}, interpretError(err)
	}
	if tag.RowsAffected() == 0 {
		return TenantSettings{}, ErrNotFound
	}
	raised := l.MonthlyAllowance.Set && before.MonthlyAllowance != nil &&
		(l.MonthlyAllowance.Value == nil || *l.MonthlyAllowance.Value > *before.MonthlyAllowance)
	if raised {
		if _, err := s.resumePaused(ctx, `tenant = $1 AND paused_by = 'allowance'`, tenant); err != nil {
			return TenantSettings{}, err
		}
	}
	return s.GetTenantSettings(ctx, tenant)
}

// SetRetention sets how long a tenant's personal data is kept (nil: until
// erased), logs the change in the audit log, and returns the settings.
func (s *Store) SetRetention(ctx context.Context, tenant, keyID string, window *time.Duration) (TenantSettings, error) {
	if err := needTenant(tenant); err != nil {
		return TenantSettings{}, err
	}
	var secs *int64
	if window != nil {
		if *window < time.Second {
			return TenantSettings{}, errors.New("store: a retention window is at least a second")
		}
		n := int64(*window / time.Second)
		secs = &n
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		n, err := exec(ctx, tx, `UPDATE tenants SET retention_seconds = $2 WHERE id = $1`, tenant, secs)
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		return appendAudit(ctx, tx, AuditLine{Tenant: tenant, KeyID: keyID, Action: AuditRetention, Subject: tenant, Rows: n})
	})
	if err != nil {
		return TenantSettings{}, err
	}
	return s.GetTenantSettings(ctx, tenant)
}
