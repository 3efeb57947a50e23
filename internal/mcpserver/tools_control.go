package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type raiseIn struct {
	JobID         string `json:"job_id" jsonschema:"the job's id"`
	BudgetCredits *int64 `json:"budget_credits,omitempty" jsonschema:"required: the job's new budget in credits, above its current one and at most this key's MCP ceiling"`
}

func (t *tools) addControlTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:  "cancel_job",
		Title: "Cancel a job",
		Description: "Stops a job: rows not yet started are skipped and cost nothing; rows being looked up finish. " +
			"What was found stays readable. Canceling a canceled job changes nothing; a finished job cannot be canceled.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.cancelJob)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "raise_budget",
		Title: "Raise a job's budget (spends credits)",
		Description: "Raises a job's budget, at most to this key's MCP ceiling; a job paused because its budget ran out goes on. " +
			"The budget can only go up here.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(true)},
	}, t.raiseBudget)
}

func (t *tools) cancelJob(ctx context.Context, _ *mcp.CallToolRequest, in jobIn) (*mcp.CallToolResult, any, error) {
	st, err := t.svc.Cancel(ctx, t.p, in.JobID)
	if err != nil {
		return nil, nil, t.toolError(ctx, "cancel_job", err)
	}
	return nil, statusOf(st), nil
}

func (t *tools) raiseBudget(ctx context.Context, _ *mcp.CallToolRequest, in raiseIn) (*mcp.CallToolResult, any, error) {
	if err := t.checkBudget("raise_budget", in.BudgetCredits); err != nil {
		return nil, nil, err
	}
	st, err := t.svc.JobStatus(ctx, t.p, in.JobID)
	if err != nil {
		return nil, nil, t.toolError(ctx, "raise_budget", err)
	}
	switch cur := st.Credits.Budget; {
	case cur == nil:
		return nil, nil, refusef("budget_not_raised: job %s has no budget of its own (the account's limits bound it); there is nothing to raise", st.ID)
	case *in.BudgetCredits <= *cur:
		return nil, nil, refusef("budget_not_raised: budget_credits %d is not above the job's budget of %d; raise_budget only raises (cancel_job stops a job)", *in.BudgetCredits, *cur)
	}
	st, err = t.svc.SetBudget(ctx, t.p, in.JobID, in.BudgetCredits)
	if err != nil {
		return nil, nil, t.toolError(ctx, "raise_budget", err)
	}
	return nil, statusOf(st), nil
}
