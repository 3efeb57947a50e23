package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// BudgetPausePrefix starts the state reason of a job paused by a budget.
const BudgetPausePrefix = "budget exhausted"

// UpdateBudget sets a job's budget (nil: none). A job paused because its
// budget ran out resumes when the new budget leaves room for more calls. A
// finished job (completed, canceled, failed) keeps its budget: the job and
// a *JobFinishedError.
func (s *Store) UpdateBudget(ctx context.Context, tenant, id string, budget *int64) (Job, error) {
	return s.changeBudget(ctx, tenant, id, func(pgx.Tx, Job) (*int64, error) { return budget, nil })
}

// JobFinishedError: the job has finished (State); what was asked changes
// nothing now. It is an ErrConflict.
type JobFinishedError struct{ State domain.JobState }

func (e *JobFinishedError) Error() string { return "the job is already " + string(e.State) }
func (e *JobFinishedError) Unwrap() error { return ErrConflict }

// BudgetNotRaisedError: RaiseBudget was asked for a budget not above the
// job's (Current; nil when the job has none). It is an ErrConflict.
type BudgetNotRaisedError struct {
	Current *int64
	Asked   int64
}

func (e *BudgetNotRaisedError) Error() string {
	if e.Current == nil {
		return "the job has no budget of its own (the account's limits bound it): there is nothing to raise"
	}
	return fmt.Sprintf("budget_credits %d is not above the job's budget of %d", e.Asked, *e.Current)
}
func (e *BudgetNotRaisedError) Unwrap() error { return ErrConflict }

// RaiseBudget raises the budget of the tenant's job to budget, which must be
// above its current one (else a *BudgetNotRaisedError), as UpdateBudget
// does otherwise. With spend, the increase is committed to the key's MCP
// spend of the day in the same transaction, within the ceiling
// (CommitMCPSpend): the job's row is locked, so two raises of one job count
// the increase once. It returns the job and the key's spend after the raise.
func (s *Store) RaiseBudget(ctx context.Context, tenant, id string, budget int64, spend *MCPSpendLimit) (Job, int64, error) {
	var committed int64
	j, err := s.changeBudget(ctx, tenant, id, func(tx pgx.Tx, j Job) (*int64, error) {
		if j.BudgetCredits == nil || budget <= *j.BudgetCredits {
			return nil, &BudgetNotRaisedError{Current: j.BudgetCredits, Asked: budget}
		}
		if spend != nil {
			var err error
			if committed, err = commitMCPSpend(ctx, tx, *spend, budget-*j.BudgetCredits); err != nil {
				return nil, err
			}
		}
		return &budget, nil
	})
	return j, committed, err
}

// changeBudget sets the budget of the tenant's job to what decide says, in
// a transaction holding the job's row, refusing a finished job; then
// resumes the job if its budget paused it and the new one leaves room.
func (s *Store) changeBudget(ctx context.Context, tenant, id string, decide func(pgx.Tx, Job) (*int64, error)) (Job, error) {
	if err := needTenant(tenant); err != nil {
		return Job{}, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return Job{}, ErrNotFound
	}
	var j Job
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		j, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1 AND tenant = $2 FOR UPDATE`, id, tenant))
		if err != nil {
			return err
		}
		switch j.State {
		case domain.JobCompleted, domain.JobCanceled, domain.JobFailed:
			return &JobFinishedError{State: j.State}
		}
		budget, err := decide(tx, j)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE jobs SET budget_credits = $2, updated_at = now() WHERE id = $1`, id, budget); err != nil {
			return interpretError(err)
		}
		j.BudgetCredits = budget
		return nil
	})
	if err != nil {
		return j, err
	}
	room := j.BudgetCredits == nil || *j.BudgetCredits > j.CreditsSpent+j.CreditsReserved
	if j.State == domain.JobPaused && room {
		// Only a pause by the job's own budget: an allowance still spent, or
		// a key the vendor refuses, is not cured by a budget.
		cause, err := s.pauseCause(ctx, id)
		if err != nil {
			return Job{}, err
		}
		if cause == domain.PausedByJobBudget {
			if err := s.ResumeJob(ctx, id); err != nil {
				return Job{}, err
			}
		}
	}
	return s.GetJob(ctx, tenant, id)
}
