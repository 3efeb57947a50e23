package store

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/enrichq/enrichq/internal/domain"
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
	// entries and feed lines are kept (retention.go); nil: until erased.
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

// webhookSecretPrefix starts every webhook secret, so a leaked one is recognisable.
const webhookSecretPrefix = "whsec_"

// RotateWebhookSecret gives the tenant a new webhook secret and returns it:
// the only time it is shown. Deliveries signed from then on use it.
func (s *Store) RotateWebhookSecret(ctx context.Context, tenant string) (secret string, at time.Time, err error) {
	if err := needTenant(tenant); err != nil {
		return "", time.Time{}, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", time.Time{}, err
	}
	secret = webhookSecretPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	err = s.pool.QueryRow(ctx, `UPDATE tenants SET webhook_secret = $2, webhook_secret_rotated_at = now() WHERE id = $1
		RETURNING webhook_secret_rotated_at`, tenant, secret).Scan(&at)
	if err != nil {
		return "", time.Time{}, interpretError(err)
	}
	return secret, at, nil
}

// TenantWebhookSecret returns the tenant's webhook secret: for the
// operator's command that creates the tenant (it shows the secret then), and
// for tests. Tenants see it only when it is made (RotateWebhookSecret).
func (s *Store) TenantWebhookSecret(ctx context.Context, tenant string) (string, error) {
	if err := needTenant(tenant); err != nil {
		return "", err
	}
	var secret string
	err := s.pool.QueryRow(ctx, `SELECT webhook_secret FROM tenants WHERE id = $1`, tenant).Scan(&secret)
	return secret, interpretError(err)
}

// tenantBudgetError reads the refusal of the tenant's allowance that the
// credit ledger's trigger raises (SQLSTATE EQ001, DETAIL
// "spent,reserved,allowance"); nil for any other error.
func tenantBudgetError(err error, wanted int64) *BudgetError {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "EQ001" {
		return nil
	}
	be := &BudgetError{Scope: "tenant", Wanted: wanted}
	if f := strings.Split(pgErr.Detail, ","); len(f) == 3 {
		be.Spent, _ = strconv.ParseInt(f[0], 10, 64)
		be.Reserved, _ = strconv.ParseInt(f[1], 10, 64)
		be.Budget, _ = strconv.ParseInt(f[2], 10, 64)
	}
	return be
}

// pauseCause is why a job is paused; "" when it is not.
func (s *Store) pauseCause(ctx context.Context, id string) (domain.PauseCause, error) {
	var cause *domain.PauseCause
	if err := s.pool.QueryRow(ctx, `SELECT paused_by FROM jobs WHERE id = $1`, id).Scan(&cause); err != nil {
		return "", interpretError(err)
	}
	if cause == nil {
		return "", nil
	}
	return *cause, nil
}

// JobPauseCause is why the tenant's job is paused; "" when it is not paused.
func (s *Store) JobPauseCause(ctx context.Context, tenant, id string) (domain.PauseCause, error) {
	if _, err := s.GetJob(ctx, tenant, id); err != nil {
		return "", err
	}
	return s.pauseCause(ctx, id)
}

// ResumeAllowancePaused resumes the jobs paused by a monthly allowance
// before the month of now (UTC) began: the allowance has renewed. It
// returns the jobs it resumed (at most limit).
func (s *Store) ResumeAllowancePaused(ctx context.Context, now time.Time, limit int) ([]string, error) {
	month := time.Date(now.UTC().Year(), now.UTC().Month(), 1, 0, 0, 0, 0, time.UTC)
	return s.resumePaused(ctx, `paused_by = 'allowance' AND paused_at < $1 ORDER BY paused_at LIMIT $2`, month, limit)
}

// ResumeVendorPaused resumes every job paused because the vendor refused
// the key or the plan (the operator fixed it: `api jobs resume`).
func (s *Store) ResumeVendorPaused(ctx context.Context) ([]string, error) {
	return s.resumePaused(ctx, `paused_by = 'vendor_access'`)
}

// resumePaused resumes the paused jobs that where (after "state = 'paused'
// AND") selects, one by one, and returns their ids.
func (s *Store) resumePaused(ctx context.Context, where string, args ...any) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id::text FROM jobs WHERE state = 'paused' AND `+where, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, interpretError(err)
	}
	for i, id := range ids {
		if err := s.ResumeJob(ctx, id); err != nil {
			return ids[:i], err
		}
	}
	return ids, nil
}
