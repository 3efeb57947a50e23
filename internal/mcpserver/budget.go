package mcpserver

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

// checkBudget refuses a missing budget, a negative one, and one above the
// ceiling; what says where the budget was given (budget_credits of submit_job
// or raise_budget).
func (t *tools) checkBudget(what string, budget *int64) error {
	c := t.ceiling()
	switch {
	case c <= 0:
		return refusef("budget_refused: this API key may not spend credits through MCP (its MCP budget ceiling is 0); an operator sets one with `api keys create --mcp-max-budget N` or ENRICHQ_MCP_MAX_BUDGET")
	case budget == nil:
		return refusef("budget_required: %s needs budget_credits, the most the job may spend, from 1 to %d (this key's MCP ceiling); estimate_job says what the list would cost", what, c)
	case *budget <= 0:
		return refusef("invalid_options: budget_credits is %d; give a whole number from 1 to %d", *budget, c)
	case *budget > c:
		return refusef("budget_above_ceiling: budget_credits %d is above this key's MCP ceiling of %d credits; ask for a smaller list or budget, or have an operator raise the ceiling", *budget, c)
	}
	return nil
}
