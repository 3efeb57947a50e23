package mcpserver

import (
	"context"
	"fmt"
	"math"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
)

// MaxInlineRows caps the rows an assistant sends inline: a longer list is
// uploaded once (POST /v1/uploads, `enrichq upload`) and named by its id.
const MaxInlineRows = 1000

// rowIn is one row of a list given inline; it becomes an ingest.RowIn.
type rowIn struct {
	Ref        string            `json:"ref,omitempty" jsonschema:"your own id of the row, echoed in the results"`
	ProfileURL string            `json:"profile_url,omitempty" jsonschema:"a person's profile URL: looked up as it is"`
	Name       string            `json:"name,omitempty" jsonschema:"a person's full name, with company or domain"`
	Company    string            `json:"company,omitempty" jsonschema:"a company name; alone, it is searched for the job's roles"`
	Domain     string            `json:"domain,omitempty" jsonschema:"the company's web domain, e.g. acme.com"`
	Email      string            `json:"email,omitempty" jsonschema:"a person's email address"`
	Role       string            `json:"role,omitempty" jsonschema:"the role to find at this row's company (instead of the job's roles)"`
	Extra      map[string]string `json:"extra,omitempty" jsonschema:"your own columns, echoed in the results"`
}

// listIn is the list of a job and how to look it up: estimate_job's input,
// and part of submit_job's.
type listIn struct {
	Rows     []rowIn  `json:"rows,omitempty" jsonschema:"the list, inline (at most 1000 rows): each row a profile_url, a name with company or domain, an email, or a company (then give roles). Give rows or upload_id."`
	UploadID string   `json:"upload_id,omitempty" jsonschema:"the id of a file uploaded before (POST /v1/uploads or enrichq upload FILE), instead of rows"`
	Roles    []string `json:"roles,omitempty" jsonschema:"roles to find at each company-only row, e.g. [\"VP Sales\", \"CTO\"]"`
	Lookups  []string `json:"lookups,omitempty" jsonschema:"what to find: any of profile, email, phone, verify (default [profile]); email and phone cost more; verify (with email) has every email found checked by a verifier, an invalid one not delivered, each with its email_status"`
	MaxAge   string   `json:"max_age,omitempty" jsonschema:"reuse answers already bought if newer than this, e.g. 30d or 12h (default 30d): they cost nothing"`
}

type estimateIn struct {
	listIn
}

type submitIn struct {
	listIn
	Name           string `json:"name,omitempty" jsonschema:"a name for the job, shown in list_jobs"`
	BudgetCredits  *int64 `json:"budget_credits,omitempty" jsonschema:"required: the most the job may spend, in credits (at most this key's MCP ceiling); the job pauses there instead of spending more"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a key of your own: submitting again with it returns the first job instead of paying twice"`
}

func (t *tools) addSubmitTools(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "estimate_job",
		Title: "Estimate a job",
		Description: "What enriching a list would cost and take, without storing or spending anything: lookups, " +
			"how many the cache already answers, vendor calls (email verifications among them, with verify), credits from-to (min: every email and phone lookup misses; " +
			"max: every lookup hits) and seconds at the vendor's rate, and this key's budget ceilings (per job, and what is left today). " +
			"Give the list inline (rows) or by upload_id.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.estimateJob)
	addTool(s, &mcp.Tool{
		Name:  "submit_job",
		Title: "Submit a job (spends credits)",
		Description: "Starts enriching a list at the paid vendor. Spends up to budget_credits, which is required and " +
			"may not exceed this key's MCP ceiling, nor what is left of its daily MCP ceiling (estimate_job shows both). " +
			"Returns the job's status; follow it with job_status.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(true)},
	}, t.submitJob)
}

// estimateOut is estimate_job's answer.
type estimateOut struct {
	service.Estimate
	service.UploadFields
	// BudgetCeiling is the most budget_credits submit_job takes now: the
	// per-job ceiling, or what is left of today's if less.
	BudgetCeiling int64   `json:"budget_ceiling"`
	MCPBudget     budgets `json:"mcp_budget"`
	Summary       string  `json:"summary"`
}

func (t *tools) estimateJob(ctx context.Context, _ *mcp.CallToolRequest, in estimateIn) (*mcp.CallToolResult, any, error) {
	sub, up, err := t.submission(in.listIn, nil, "")
	if err != nil {
		return nil, nil, t.toolError(ctx, "estimate_job", err)
	}
	est, err := t.svc.Estimate(ctx, t.p, sub)
	if err != nil {
		return nil, nil, t.toolError(ctx, "estimate_job", err)
	}
	mb, err := t.spendToday(ctx)
	if err != nil {
		return nil, nil, t.toolError(ctx, "estimate_job", err)
	}
	out := estimateOut{Estimate: est, UploadFields: up.Fields(), BudgetCeiling: min(t.ceiling(), mb.Left), MCPBudget: mb}
	out.Summary = fmt.Sprintf("%d lookups (%d distinct, %d answered by the cache): %d to %d credits, about %s; this key may submit with a budget of at most %d credits (%d left of today's MCP ceiling of %d)",
		est.Rows, est.Distinct, est.Cached, est.Credits.Min, est.Credits.Max, seconds(est.Seconds), out.BudgetCeiling, mb.Left, mb.Ceiling)
	return nil, out, nil
}

func (t *tools) submitJob(ctx context.Context, _ *mcp.CallToolRequest, in submitIn) (*mcp.CallToolResult, any, error) {
	if err := t.checkBudget("submit_job", in.BudgetCredits); err != nil {
		return nil, nil, err
	}
	sub, _, err := t.submission(in.listIn, in.BudgetCredits, in.Name)
	if err != nil {
		return nil, nil, t.toolError(ctx, "submit_job", err)
	}
	sub.IdempotencyKey = in.IdempotencyKey
	// The budget counts toward today's ceiling before the job is made, in
	// one statement with the check: two submits at once cannot both take
	// the last room. A job not made gives it back.
	_, undo, err := t.svc.CommitMCPSpend(ctx, t.p, *in.BudgetCredits, t.dailyCeiling())
	if err != nil {
		return nil, nil, t.toolError(ctx, "submit_job", dailyRefusal(err, fmt.Sprintf("budget_credits %d", *in.BudgetCredits)))
	}
	st, created, err := t.svc.Submit(ctx, t.p, sub)
	spend := undo(created, err)
	if err != nil {
		return nil, nil, t.toolError(ctx, "submit_job", err)
	}
	out := t.paid(st, spend)
	if !created {
		out.Summary = "idempotency_key used before: this is the first job, nothing new was submitted. " + out.Summary
	}
	return nil, out, nil
}

// submission is the job of a list given inline or by upload id, with the
// job options validated as the REST API validates a JSON job.
func (t *tools) submission(in listIn, budget *int64, name string) (service.Submission, *service.Counted, error) {
	switch {
	case len(in.Rows) > 0 && in.UploadID != "":
		return service.Submission{}, nil, refusef("invalid_options: give rows or upload_id, not both")
	case len(in.Rows) == 0 && in.UploadID == "":
		return service.Submission{}, nil, refusef("invalid_options: no list: give rows (inline, at most %d) or the upload_id of an uploaded file", MaxInlineRows)
	case len(in.Rows) > MaxInlineRows:
		return service.Submission{}, nil, refusef("invalid_options: %d rows given inline; at most %d: upload the file (POST /v1/uploads, enrichq upload FILE) and give its upload_id", len(in.Rows), MaxInlineRows)
	}
	req := ingest.JobRequest{Name: name, Roles: in.Roles, Lookups: in.Lookups, BudgetCredits: budget, MaxAge: in.MaxAge, UploadID: in.UploadID}
	lim := t.svc.Limits()
	opts, err := req.Options(lim)
	if err != nil {
		return service.Submission{}, nil, err
	}
	c := &service.Counted{}
	if in.UploadID != "" {
		return service.Submission{Options: opts, UploadID: in.UploadID}, c, nil
	}
	rows := make([]ingest.RowIn, len(in.Rows))
	for i, r := range in.Rows {
		rows[i] = ingest.RowIn(r)
	}
	return service.Submission{Format: "json", Options: opts, Upload: c.Upload, Feed: c.Feed(func(emit func(ingest.Lookup) error) (ingest.Summary, error) {
		return ingest.ExpandJSON(rows, opts.Ingest(), lim, emit)
	})}, c, nil
}

// seconds says a duration in words an assistant can repeat.
func seconds(s float64) string {
	switch {
	case s < 1:
		return "a second"
	case s < 120:
		return fmt.Sprintf("%.0f seconds", math.Ceil(s))
	case s < 7200:
		return fmt.Sprintf("%.0f minutes", math.Ceil(s/60))
	}
	return fmt.Sprintf("%.1f hours", s/3600)
}
