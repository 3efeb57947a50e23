package mcpserver

import (
	"context"
	"errors"
	"math"

	"github.com/enrichq/enrichq/internal/service"
)

// DailyCeilingFactor: a key without a daily ceiling of its own, under an
// operator who set none, may commit this many times its per-job ceiling in
// a UTC day.
const DailyCeilingFactor = 5

// ceiling is the most a job submitted or raised through MCP by this key may
// have as its budget: the key's own ceiling, else the operator's default.
// An assistant spends on a user's behalf; the ceiling bounds what one
// misunderstood request can cost.
func (t *tools) ceiling() int64 {
	if t.p.MCPMaxBudget != nil {
		return *t.p.MCPMaxBudget
	}
	return t.defaultCeiling
}

// dailyCeiling is the most this key may commit through MCP in a UTC day
// (budgets submitted, increases raised): the key's own, else the
// operator's, else DailyCeilingFactor times the per-job ceiling. The
// per-job ceiling bounds one request; this bounds a loop of them.
func (t *tools) dailyCeiling() int64 {
	switch {
	case t.p.MCPMaxDailyBudget != nil:
		return *t.p.MCPMaxDailyBudget
	case t.defaultDaily != nil:
		return *t.defaultDaily
	}
	c := t.ceiling()
	if c > math.MaxInt64/DailyCeilingFactor {
		return math.MaxInt64
	}
	return c * DailyCeilingFactor
}

// budgets is what a paid tool's answer says of this key's ceilings: the
// per-job one and what is left of today's.
type budgets struct {
	JobCeiling int64 `json:"job_ceiling"`
	service.MCPSpend
}

func (t *tools) budgets(s service.MCPSpend) budgets {
	return budgets{JobCeiling: t.ceiling(), MCPSpend: s}
}

// spendToday is this key's MCP spend today, for an answer.
func (t *tools) spendToday(ctx context.Context) (budgets, error) {
	s, err := t.svc.MCPSpendToday(ctx, t.p, t.dailyCeiling())
	return t.budgets(s), err
}

// checkBudget refuses a missing budget, a negative one, and one above the
// ceiling; what says where the budget was given (budget_credits of submit_job
// or raise_budget).
func (t *tools) checkBudget(what string, budget *int64) error {
	c := t.ceiling()
	switch {
	case c <= 0 || t.dailyCeiling() <= 0:
		return refusef("budget_refused: this API key may not spend credits through MCP (its MCP budget ceiling is 0); an operator sets one with `api keys create --mcp-max-budget N --mcp-max-daily-budget N` or ENRICHQ_MCP_MAX_BUDGET and ENRICHQ_MCP_MAX_DAILY_BUDGET")
	case budget == nil:
		return refusef("budget_required: %s needs budget_credits, the most the job may spend, from 1 to %d (this key's MCP ceiling); estimate_job says what the list would cost", what, c)
	case *budget <= 0:
		return refusef("invalid_options: budget_credits is %d; give a whole number from 1 to %d", *budget, c)
	case *budget > c:
		return refusef("budget_above_ceiling: budget_credits %d is above this key's MCP ceiling of %d credits; ask for a smaller list or budget, or have an operator raise the ceiling", *budget, c)
	}
	return nil
}

// dailyRefusal words a *service.DailyCeilingError for the assistant; other
// errors pass.
func dailyRefusal(err error, what string) error {
	var dc *service.DailyCeilingError
	if !errors.As(err, &dc) {
		return err
	}
	return refusef("budget_above_daily_ceiling: %s would commit %d credits, and this key may commit only %d more through MCP today "+
		"(%d of its daily ceiling of %d committed since 00:00 UTC); ask for a smaller budget, wait for tomorrow (UTC), or have an operator raise the daily ceiling",
		what, dc.Asked, dc.Left(), dc.Committed, dc.Ceiling)
}
