package service

import (
	"context"
	"errors"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// MCPSpend is what a key committed through MCP on a UTC day, against its
// daily ceiling: the budgets of the jobs it submitted there and the
// increases it raised (docs/mcp.md, "The daily ceiling").
type MCPSpend struct {
	Day       string `json:"day"` // the UTC date, 2026-11-20
	Ceiling   int64  `json:"daily_ceiling"`
	Committed int64  `json:"committed_today"`
	Left      int64  `json:"left_today"`
}

func mcpSpend(l store.MCPSpendLimit, committed int64) MCPSpend {
	return MCPSpend{Day: l.Day.UTC().Format(time.DateOnly), Ceiling: l.Ceiling, Committed: committed, Left: max(0, l.Ceiling-committed)}
}

// DailyCeilingError: a commit above what the key may still commit today;
// nothing was recorded.
type DailyCeilingError = store.DailyCeilingError

func (s *Service) spendLimit(p Principal, ceiling int64) store.MCPSpendLimit {
	return store.MCPSpendLimit{Tenant: p.Tenant, KeyID: p.KeyID, Day: s.now(), Ceiling: ceiling}
}

// MCPSpendToday is p's MCP spend today under ceiling.
func (s *Service) MCPSpendToday(ctx context.Context, p Principal, ceiling int64) (MCPSpend, error) {
	if p.Tenant == "" {
		return MCPSpend{}, ErrNoTenant
	}
	l := s.spendLimit(p, ceiling)
	committed, err := s.store.MCPSpent(ctx, l)
	return mcpSpend(l, committed), err
}

// CommitMCPSpend records credits (the budget of a job about to be
// submitted) against p's MCP spend today if they fit under ceiling, else a
// *DailyCeilingError (scope submit). The check and the record are one
// statement: two concurrent commits cannot both take the last room. undo
// takes them back when the job is then not made (pass Submit's created and
// error): a refused submit, or an idempotent replay of a job made before.
// An error that leaves unknown whether the job was stored (the database
// went away mid-commit) keeps the record: the ceiling errs toward refusing.
func (s *Service) CommitMCPSpend(ctx context.Context, p Principal, credits, ceiling int64) (spend MCPSpend, undo func(created bool, err error) MCPSpend, err error) {
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return MCPSpend{}, nil, err
	}
	l := s.spendLimit(p, ceiling)
	committed, err := s.store.CommitMCPSpend(ctx, l, credits)
	if err != nil {
		return MCPSpend{}, nil, err
	}
	spend = mcpSpend(l, committed)
	undo = func(created bool, err error) MCPSpend {
		if created || errors.Is(err, ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return spend
		}
		if err := s.store.ReleaseMCPSpend(context.WithoutCancel(ctx), l, credits); err != nil {
			return spend // counted once too often: toward refusing, never toward spending
		}
		return mcpSpend(l, committed-credits)
	}
	return spend, undo, nil
}

// RaiseBudget raises the budget of the tenant's job id to budget (scope
// submit: raising is a submit's act, as PATCH /v1/jobs/{id} is). The budget
// must be above the job's (a *ConflictError budget_not_raised); a finished
// job is a *ConflictError job_finished. With daily, the increase is
// committed to p's MCP spend of today in the same transaction, within
// *daily (a *DailyCeilingError when it does not fit). A job paused by its
// budget goes on.
func (s *Service) RaiseBudget(ctx context.Context, p Principal, id string, budget int64, daily *int64) (_ JobStatus, _ *MCPSpend, err error) {
	defer func() { err = notFound("job", err) }()
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return JobStatus{}, nil, err
	}
	var l *store.MCPSpendLimit
	if daily != nil {
		v := s.spendLimit(p, *daily)
		l = &v
	}
	job, committed, err := s.store.RaiseBudget(ctx, p.Tenant, id, budget, l)
	s.statuses.drop(p.Tenant, id)
	if err != nil {
		return JobStatus{}, nil, budgetError(err)
	}
	if err := s.audit(ctx, p, store.AuditBudget, job.ID, 1); err != nil {
		return JobStatus{}, nil, err
	}
	st, err := s.status(ctx, job)
	if err != nil || l == nil {
		return st, nil, err
	}
	spend := mcpSpend(*l, committed)
	return st, &spend, nil
}

// budgetError names why a budget could not change.
func budgetError(err error) error {
	var (
		finished  *store.JobFinishedError
		notRaised *store.BudgetNotRaisedError
	)
	switch {
	case errors.As(err, &finished):
		return &ConflictError{Code: "job_finished", Message: "the job is already " + string(finished.State) + "; its budget can no longer change"}
	case errors.As(err, &notRaised):
		return &ConflictError{Code: "budget_not_raised", Message: notRaised.Error()}
	}
	return err
}
