package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/service"
)

type raiseIn struct {
	JobID         string `json:"job_id" jsonschema:"the job's id"`
	BudgetCredits *int64 `json:"budget_credits,omitempty" jsonschema:"required: the job's new budget in credits, above its current one and at most this key's MCP ceiling"`
}

func (t *tools) addControlTools(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "cancel_job",
		Title: "Cancel a job",
		Description: "Stops a job: rows not yet started are skipped and cost nothing; rows being looked up finish. " +
			"What was found stays readable. Canceling a canceled job changes nothing; a finished job cannot be canceled.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.cancelJob)
	addTool(s, &mcp.Tool{
		Name:  "raise_budget",
		Title: "Raise a job's budget (spends credits)",
		Description: "Raises a job's budget, at most to this key's MCP ceiling; a job paused because its budget ran out goes on. " +
			"The budget can only go up here, and not once the job has finished. The increase counts toward this key's daily MCP ceiling.",
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
	daily := t.dailyCeiling()
	st, spend, err := t.svc.RaiseBudget(ctx, t.p, in.JobID, *in.BudgetCredits, &daily)
	var conflict *service.ConflictError
	switch {
	case errors.As(err, &conflict) && conflict.Code == "budget_not_raised":
		return nil, nil, refusef("budget_not_raised: %s; raise_budget only raises (cancel_job stops a job)", conflict.Message)
	case err != nil:
		return nil, nil, t.toolError(ctx, "raise_budget", dailyRefusal(err, fmt.Sprintf("raising the budget to %d", *in.BudgetCredits)))
	}
	return nil, t.paid(st, *spend), nil
}

// paidOut is the answer of a tool that commits credits: the job's status
// and what this key may still commit through MCP today.
type paidOut struct {
	statusView
	MCPBudget budgets `json:"mcp_budget"`
}

func (t *tools) paid(st service.JobStatus, spend service.MCPSpend) paidOut {
	out := paidOut{statusView: statusOf(st), MCPBudget: t.budgets(spend)}
	out.Summary += fmt.Sprintf("; this key may commit %d more credits through MCP today (daily ceiling %d)", spend.Left, spend.Ceiling)
	return out
}
