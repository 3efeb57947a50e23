package service

import (
	"context"
	"errors"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// Account is what a tenant may spend and has spent: its limits and this
// calendar month's credits (UTC). The webhook secret is never part of it.
type Account struct {
	Tenant string `json:"tenant"`
	// DefaultJobBudget is the budget of a job submitted without one; nil: none.
	DefaultJobBudget *int64 `json:"default_job_budget"`
	// MonthlyAllowance caps the credits of all the tenant's jobs in a
	// calendar month (UTC); nil: no cap.
	MonthlyAllowance *int64       `json:"monthly_allowance"`
	Month            AccountMonth `json:"month"`
	// WebhookSecretRotatedAt is when the tenant's webhook secret was made.
	WebhookSecretRotatedAt time.Time `json:"webhook_secret_rotated_at"`
	// Retention is how long the tenant's personal data is kept ("30d");
	// nil: until erased.
	Retention *string `json:"retention"`
}

// AccountMonth is the tenant's credits in the current month.
type AccountMonth struct {
	Start    string `json:"start"` // YYYY-MM-DD, UTC
	Spent    int64  `json:"spent"`
	Reserved int64  `json:"reserved"`
	// Remaining is the allowance less spent and reserved; nil without an allowance.
	Remaining *int64 `json:"remaining"`
	// WatchesSpent is what the tenant's watches' runs spent (part of Spent).
	WatchesSpent int64 `json:"watches_spent"`
}

// Account returns the tenant's limits and this month's credits (scope read).
func (s *Service) Account(ctx context.Context, p Principal) (Account, error) {
	if err := p.Require(domain.ScopeRead); err != nil {
		return Account{}, err
	}
	set, err := s.store.GetTenantSettings(ctx, p.Tenant)
	if err != nil {
		return Account{}, err
	}
	return s.account(ctx, set)
}

func (s *Service) account(ctx context.Context, set store.TenantSettings) (Account, error) {
	u, err := s.store.TenantMonth(ctx, set.Tenant, s.now())
	if err != nil {
		return Account{}, err
	}
	watches, err := s.store.TenantWatchSpend(ctx, set.Tenant, s.now())
	if err != nil {
		return Account{}, err
	}
	a := Account{Tenant: set.Tenant, DefaultJobBudget: set.DefaultJobBudget, MonthlyAllowance: set.MonthlyAllowance,
		WebhookSecretRotatedAt: set.WebhookSecretRotatedAt, Retention: FormatRetention(set.Retention),
		Month: AccountMonth{Start: u.Month.Format(time.DateOnly), Spent: u.Spent, Reserved: u.Reserved, WatchesSpent: watches}}
	if set.MonthlyAllowance != nil {
		left := max(0, *set.MonthlyAllowance-u.Spent-u.Reserved)
		a.Month.Remaining = &left
	}
	return a, nil
}

// AccountLimits changes a tenant's limits: a field left unset is kept; set
// with a nil value, the limit is removed.
type AccountLimits = store.TenantLimits

// Limit is one limit of AccountLimits: set (to a value or to none) or left as it is.
type Limit = store.Limit

// SetAccountLimits changes the tenant's default job budget and monthly
// allowance (scope admin) and returns the account. Raising the allowance
// resumes the tenant's jobs it paused.
func (s *Service) SetAccountLimits(ctx context.Context, p Principal, l AccountLimits) (Account, error) {
	if err := p.Require(domain.ScopeAdmin); err != nil {
		return Account{}, err
	}
	for name, v := range map[string]store.Limit{"default_job_budget": l.DefaultJobBudget, "monthly_allowance": l.MonthlyAllowance} {
		if v.Set && v.Value != nil && *v.Value < 0 {
			return Account{}, invalidParam(name, "%s must be a whole number >= 0 or null", name)
		}
	}
	if !l.DefaultJobBudget.Set && !l.MonthlyAllowance.Set {
		return Account{}, &InvalidError{Code: CodeInvalidOptions, Message: "nothing to change: send default_job_budget, monthly_allowance or both"}
	}
	set, err := s.store.UpdateTenantLimits(ctx, p.Tenant, l)
	if err != nil {
		return Account{}, err
	}
	if err := s.audit(ctx, p, store.AuditLimits, p.Tenant, 1); err != nil {
		return Account{}, err
	}
	return s.account(ctx, set)
}

// WebhookSecret is a tenant's new webhook secret: shown once, here.
type WebhookSecret struct {
	Secret    string    `json:"webhook_secret"`
	RotatedAt time.Time `json:"rotated_at"`
}

// RotateWebhookSecret gives the tenant a new webhook secret and returns it
// (scope admin). It signs every delivery from then on; the old one no longer
// verifies them.
func (s *Service) RotateWebhookSecret(ctx context.Context, p Principal) (WebhookSecret, error) {
	if err := p.Require(domain.ScopeAdmin); err != nil {
		return WebhookSecret{}, err
	}
	secret, at, err := s.store.RotateWebhookSecret(ctx, p.Tenant)
	if err != nil {
		return WebhookSecret{}, err
	}
	return WebhookSecret{Secret: secret, RotatedAt: at}, nil
}

// Resume resumes the tenant's paused job id (scope submit), whatever paused
// it but its own budget: a job paused by the vendor's refusal (401, 403)
// once the key or plan is fixed, one paused by an allowance when the
// tenant wants it tried again (if the allowance is still spent, its next
// reservation pauses it again before any call). A job paused by its budget
// is a *ConflictError budget_exhausted (raise budget_credits instead); one
// not paused, not_paused. Once resumed, the job finishes as any other, and
// its callback is sent then.
func (s *Service) Resume(ctx context.Context, p Principal, id string) (_ JobStatus, err error) {
	defer func() { err = notFound("job", err) }()
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return JobStatus{}, err
	}
	cause, err := s.store.JobPauseCause(ctx, p.Tenant, id)
	if err != nil {
		return JobStatus{}, err
	}
	switch cause {
	case "":
		return JobStatus{}, &ConflictError{Code: "not_paused", Message: "the job is not paused"}
	case domain.PausedByJobBudget:
		return JobStatus{}, &ConflictError{Code: "budget_exhausted",
			Message: "the job's budget is spent: raise budget_credits (PATCH /v1/jobs/{id}) to resume it"}
	case domain.PausedByPlatform:
		return JobStatus{}, &ConflictError{Code: "member_sync", Message: "a member sync resumes by POST /v1/platform/sync/{id}/resume"}
	}
	if err := s.store.ResumeJob(ctx, id); err != nil {
		return JobStatus{}, err
	}
	s.statuses.drop(p.Tenant, id)
	job, err := s.store.GetJob(ctx, p.Tenant, id)
	if err != nil {
		return JobStatus{}, err
	}
	return s.status(ctx, job)
}

// withDefaultBudget gives a submission without a budget the tenant's
// default job budget. A tenant unknown to the tenants table (keys of older
// deployments made before it) has none.
func (s *Service) withDefaultBudget(ctx context.Context, tenant string, sub *Submission) error {
	if sub.Options.BudgetCredits != nil {
		return nil
	}
	set, err := s.store.GetTenantSettings(ctx, tenant)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	sub.Options.BudgetCredits = set.DefaultJobBudget
	return nil
}
