package service

import (
	"context"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// SetBudget sets the budget of the tenant's job id (scope submit): budget
// nil removes it. Raising the budget of a job paused by it resumes the job;
// a finished job's budget cannot change (a *ConflictError job_finished).
func (s *Service) SetBudget(ctx context.Context, p Principal, id string, budget *int64) (_ JobStatus, err error) {
	defer func() { err = notFound("job", err) }()
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return JobStatus{}, err
	}
	if budget != nil && *budget < 0 {
		return JobStatus{}, &InvalidError{Code: CodeInvalidOptions, Message: "budget_credits must be a whole number >= 0 or null"}
	}
	job, err := s.store.UpdateBudget(ctx, p.Tenant, id, budget)
	s.statuses.drop(p.Tenant, id)
	if err != nil {
		return JobStatus{}, budgetError(err)
	}
	if err := s.audit(ctx, p, store.AuditBudget, job.ID, 1); err != nil {
		return JobStatus{}, err
	}
	return s.status(ctx, job)
}

// StageCost is what one stage of a job cost: its calls and credits.
type StageCost = store.StageCost

// JobCosts is what a job cost, by stage, and its credits.
type JobCosts struct {
	JobID   string                     `json:"job_id"`
	ByStage map[domain.Stage]StageCost `json:"by_stage"`
	Credits JobCredits                 `json:"credits"`
	// Balance sets the job's ledger beside the vendor's balance readings
	// (X-Credits-Remaining) of its calls: the second witness.
	Balance store.Drift `json:"balance"`
	// ByVendor is what each vendor's calls cost, in budget units, each
	// beside its own balance readings.
	ByVendor map[string]store.VendorCost `json:"by_vendor"`
}

// Costs returns what the tenant's job id cost, by stage (scope read).
func (s *Service) Costs(ctx context.Context, p Principal, id string) (_ JobCosts, err error) {
	defer func() { err = notFound("job", err) }()
	if err := p.Require(domain.ScopeRead); err != nil {
		return JobCosts{}, err
	}
	job, err := s.store.GetJob(ctx, p.Tenant, id)
	if err != nil {
		return JobCosts{}, err
	}
	byStage, err := s.store.JobCosts(ctx, job.ID)
	if err != nil {
		return JobCosts{}, err
	}
	if byStage == nil {
		byStage = map[domain.Stage]StageCost{}
	}
	drift, err := s.store.JobDrift(ctx, job.ID)
	if err != nil {
		return JobCosts{}, err
	}
	credits := JobCredits{Budget: job.BudgetCredits, Reserved: job.CreditsReserved, Spent: job.CreditsSpent}
	if job.FinishedAt != nil {
		u, err := s.store.JobUnsettled(ctx, job.ID)
		if err != nil {
			return JobCosts{}, err
		}
		credits.Unsettled, credits.UnsettledReason = u.Credits, u.Reason()
	}
	byVendor, err := s.store.JobVendorCosts(ctx, job.ID)
	if err != nil {
		return JobCosts{}, err
	}
	return JobCosts{JobID: job.ID, ByStage: byStage, Credits: credits, Balance: drift, ByVendor: byVendor}, nil
}

// PauseCause says why the tenant's job id is paused ("" when it is not):
// each cause has its own way back (scope read).
func (s *Service) PauseCause(ctx context.Context, p Principal, id string) (_ domain.PauseCause, err error) {
	defer func() { err = notFound("job", err) }()
	if err := p.Require(domain.ScopeRead); err != nil {
		return "", err
	}
	return s.store.JobPauseCause(ctx, p.Tenant, id)
}
