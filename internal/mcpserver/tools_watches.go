package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

// A watch keeps a finished job's list fresh (docs/watches.md). Through MCP
// its money is bounded as a job's is: the monthly cap of a watch made here
// is at most the key's per-job ceiling and counts toward the key's daily
// ceiling when made; a run started here has a budget of what is left of
// the month's cap, which must fit both ceilings too.

type newWatchIn struct {
	JobID             string   `json:"job_id" jsonschema:"the finished job whose distinct inputs are watched"`
	Every             string   `json:"every,omitempty" jsonschema:"how often to run, whole days like 30d (at least 7d; default 30d)"`
	MonthlyCapCredits *int64   `json:"monthly_cap_credits,omitempty" jsonschema:"required: the most the watch may spend in a calendar month, in credits (at most this key's MCP ceiling)"`
	Lookups           []string `json:"lookups,omitempty" jsonschema:"what to look up again: any of profile, email, phone, verify (verify with email: each email found checked again; default: the job's)"`
}

type watchIn struct {
	WatchID string `json:"watch_id" jsonschema:"the watch's id, as create_watch or list_watches gave it"`
}

type runWatchIn struct {
	WatchID string `json:"watch_id" jsonschema:"the watch's id, as create_watch or list_watches gave it"`
	MaxAge  string `json:"max_age,omitempty" jsonschema:"buy again the answers older than this, e.g. 0s (every input) or 30d (default: the watch's period)"`
}

type pageIn struct {
	Limit  int    `json:"limit,omitempty" jsonschema:"lines per page, 1 to 200 (default 50)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the page before, for the next page"`
}

type changesIn struct {
	WatchID string `json:"watch_id" jsonschema:"the watch's id"`
	pageIn
}

// Watch paging through MCP: small pages, as list_jobs'.
const (
	defaultWatchPage = 50
	maxWatchPage     = 200
)

func (t *tools) addWatchReadTools(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "list_watches",
		Title: "List watches",
		Description: "This account's watches, newest first: the job each keeps fresh, how often, the monthly cap and this month's " +
			"credits (spent, reserved, remaining), state (active, paused) and the next run; next_cursor pages on.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.listWatches)
	addTool(s, &mcp.Tool{
		Name:  "estimate_watch",
		Title: "Estimate a watch",
		Description: "What a watch of a finished job would cost, without making it: the inputs it would keep fresh, runs a month, " +
			"credits per run and a month's credits from-to (never above the cap). create_watch makes it.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.estimateWatch)
	addTool(s, &mcp.Tool{
		Name:  "watch_changes",
		Title: "A watch's changes",
		Description: "What a watch's runs found changed, oldest first: the row's ref, the field (company, role, email, phones, " +
			"location, matched), old and new values, the vendor that answered and when; next_cursor pages on.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.watchChanges)
	addTool(s, &mcp.Tool{
		Name:  "vendor_figures",
		Title: "Where the money goes: vendors",
		Description: "This account's spend per vendor this month (credits, and the vendor's own credits), each vendor's hit rate per " +
			"segment and stage (found of asked), the order the automatic waterfall uses per segment with its expected charge " +
			"per row, the vendors out of the waterfall and why, and warnings (the month's allowance nearly used).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.vendorFigures)
}

// addWatchPaidTools adds create_watch, and run_watch to a key that also
// reads (the run's budget is read from the watch first).
func (t *tools) addWatchPaidTools(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "create_watch",
		Title: "Watch a job's list (spends credits every period)",
		Description: "Makes a watch of a finished job: every period it buys its inputs' answers again, within monthly_cap_credits, " +
			"and lists what changed (watch_changes). The cap is required, at most this key's MCP ceiling, and counts toward its " +
			"daily MCP ceiling. Answers the watch and the month's estimate (estimate_watch shows it first).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(true)},
	}, t.createWatch)
	if !t.p.Has(domain.ScopeRead) {
		return
	}
	addTool(s, &mcp.Tool{
		Name:  "run_watch",
		Title: "Run a watch now (spends credits)",
		Description: "Starts a run of a watch now, with a budget of what is left of the month's cap; that budget must fit this key's " +
			"MCP ceiling and what is left of its daily one. Answers the run's job id (follow it with job_status), or " +
			"cap_reached when nothing is left this month.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(true)},
	}, t.runWatch)
}

// watchesOut is list_watches' answer.
type watchesOut struct {
	Watches    []service.Watch `json:"watches"`
	NextCursor *string         `json:"next_cursor"`
	Summary    string          `json:"summary"`
}

func watchPage(limit int) int {
	if limit <= 0 {
		return defaultWatchPage
	}
	return min(limit, maxWatchPage)
}

func (t *tools) listWatches(ctx context.Context, _ *mcp.CallToolRequest, in pageIn) (*mcp.CallToolResult, any, error) {
	list, err := t.svc.ListWatches(ctx, t.p, in.Cursor, watchPage(in.Limit))
	if err != nil {
		return nil, nil, t.toolError(ctx, "list_watches", err)
	}
	var spent int64
	for _, w := range list.Watches {
		spent += w.Month.Spent
	}
	return nil, watchesOut{Watches: list.Watches, NextCursor: list.NextCursor,
		Summary: fmt.Sprintf("%d watches on this page, %d credits spent by them this month", len(list.Watches), spent)}, nil
}

// watchEstimateOut is estimate_watch's answer.
type watchEstimateOut struct {
	service.WatchEstimate
	MCPBudget budgets `json:"mcp_budget"`
	Summary   string  `json:"summary"`
}

func (t *tools) newWatch(in newWatchIn) service.NewWatch {
	nw := service.NewWatch{JobID: in.JobID, Every: in.Every, MonthlyCapCredits: in.MonthlyCapCredits}
	if nw.Every == "" {
		nw.Every = "30d"
	}
	for _, l := range in.Lookups {
		nw.Lookups = append(nw.Lookups, domain.Stage(l))
	}
	return nw
}

func (t *tools) estimateWatch(ctx context.Context, _ *mcp.CallToolRequest, in newWatchIn) (*mcp.CallToolResult, any, error) {
	if in.MonthlyCapCredits == nil {
		return nil, nil, refusef("invalid_parameter: monthly_cap_credits is required: the most the watch may spend in a month")
	}
	est, err := t.svc.EstimateWatch(ctx, t.p, t.newWatch(in))
	if err != nil {
		return nil, nil, t.toolError(ctx, "estimate_watch", err)
	}
	mb, err := t.spendToday(ctx)
	if err != nil {
		return nil, nil, t.toolError(ctx, "estimate_watch", err)
	}
	return nil, watchEstimateOut{WatchEstimate: est, MCPBudget: mb, Summary: estimateWords(est, *in.MonthlyCapCredits) +
		fmt.Sprintf("; create_watch takes a cap of at most %d credits now (%d left of today's MCP ceiling)", min(t.ceiling(), mb.Left), mb.Left)}, nil
}

func estimateWords(e service.WatchEstimate, monthlyCap int64) string {
	return fmt.Sprintf("%d inputs, %.2f runs a month of %d to %d credits each: %d to %d credits a month (cap %d)",
		e.Rows, e.RunsPerMonth, e.CreditsPerRun.Min, e.CreditsPerRun.Max, e.Month.Min, e.Month.Max, monthlyCap)
}

// watchCreatedOut is create_watch's answer.
type watchCreatedOut struct {
	service.WatchCreated
	MCPBudget budgets `json:"mcp_budget"`
	Summary   string  `json:"summary"`
}

func (t *tools) createWatch(ctx context.Context, _ *mcp.CallToolRequest, in newWatchIn) (*mcp.CallToolResult, any, error) {
	if err := t.checkCap(in.MonthlyCapCredits); err != nil {
		return nil, nil, err
	}
	monthCap := *in.MonthlyCapCredits
	// The cap counts toward today's ceiling before the watch is made; a
	// watch not made gives it back.
	_, undo, err := t.svc.CommitMCPSpend(ctx, t.p, monthCap, t.dailyCeiling())
	if err != nil {
		return nil, nil, t.toolError(ctx, "create_watch", dailyRefusal(err, fmt.Sprintf("monthly_cap_credits %d", monthCap)))
	}
	c, err := t.svc.CreateWatch(ctx, t.p, t.newWatch(in))
	spend := undo(err == nil, err)
	if err != nil {
		return nil, nil, t.toolError(ctx, "create_watch", watchNotFound(err))
	}
	return nil, watchCreatedOut{WatchCreated: c, MCPBudget: t.budgets(spend),
		Summary: fmt.Sprintf("watch %s made, every %s: %s; this key may commit %d more credits through MCP today",
			c.Watch.ID, c.Watch.Every, estimateWords(c.Estimate, monthCap), spend.Left)}, nil
}

// checkCap refuses a missing cap, one below 1 and one above the per-job
// ceiling, as checkBudget a job's budget.
func (t *tools) checkCap(c *int64) error {
	ceiling := t.ceiling()
	switch {
	case ceiling <= 0 || t.dailyCeiling() <= 0:
		return refusef("budget_refused: this API key may not spend credits through MCP (its MCP budget ceiling is 0); an operator sets one with `api keys create --mcp-max-budget N --mcp-max-daily-budget N` or ENRICHQ_MCP_MAX_BUDGET and ENRICHQ_MCP_MAX_DAILY_BUDGET")
	case c == nil:
		return refusef("budget_required: create_watch needs monthly_cap_credits, the most the watch may spend in a month, from 1 to %d (this key's MCP ceiling); estimate_watch says what it would cost", ceiling)
	case *c <= 0:
		return refusef("invalid_options: monthly_cap_credits is %d; give a whole number from 1 to %d", *c, ceiling)
	case *c > ceiling:
		return refusef("budget_above_ceiling: monthly_cap_credits %d is above this key's MCP ceiling of %d credits; ask for a smaller cap, or have an operator raise the ceiling", *c, ceiling)
	}
	return nil
}

// watchRunOut is run_watch's answer.
type watchRunOut struct {
	service.WatchRun
	MCPBudget budgets `json:"mcp_budget"`
	Summary   string  `json:"summary"`
}

func (t *tools) runWatch(ctx context.Context, _ *mcp.CallToolRequest, in runWatchIn) (*mcp.CallToolResult, any, error) {
	w, err := t.svc.GetWatch(ctx, t.p, in.WatchID)
	if err != nil {
		return nil, nil, t.toolError(ctx, "run_watch", watchNotFound(err))
	}
	budget := w.Month.Remaining
	if budget == 0 {
		return nil, nil, refusef("cap_reached: the watch's monthly cap of %d credits is reached; the next run is in the next month", w.MonthlyCapCredits)
	}
	if c := t.ceiling(); budget > c || c <= 0 {
		return nil, nil, refusef("budget_above_ceiling: the run's budget would be %d credits (what is left of the month's cap), above this key's MCP ceiling of %d; lower the watch's cap (PATCH /v1/watches/{id}) or run it from the web page", budget, c)
	}
	_, undo, err := t.svc.CommitMCPSpend(ctx, t.p, budget, t.dailyCeiling())
	if err != nil {
		return nil, nil, t.toolError(ctx, "run_watch", dailyRefusal(err, fmt.Sprintf("a run with a budget of %d", budget)))
	}
	run, err := t.svc.RunWatch(ctx, t.p, in.WatchID, in.MaxAge)
	spend := undo(err == nil && run.JobID != nil, err)
	if err != nil {
		return nil, nil, t.toolError(ctx, "run_watch", watchNotFound(err))
	}
	return nil, watchRunOut{WatchRun: run, MCPBudget: t.budgets(spend),
		Summary: fmt.Sprintf("run started as job %s: %d rows, budget %d credits; follow it with job_status; this key may commit %d more credits through MCP today",
			*run.JobID, run.Rows, run.Budget, spend.Left)}, nil
}

// changesOut is watch_changes' answer.
type changesOut struct {
	service.WatchChanges
	Summary string `json:"summary"`
}

func (t *tools) watchChanges(ctx context.Context, _ *mcp.CallToolRequest, in changesIn) (*mcp.CallToolResult, any, error) {
	ch, err := t.svc.WatchChanges(ctx, t.p, in.WatchID, in.Cursor, watchPage(in.Limit))
	if err != nil {
		return nil, nil, t.toolError(ctx, "watch_changes", watchNotFound(err))
	}
	return nil, changesOut{WatchChanges: ch, Summary: fmt.Sprintf("%d changes on this page", len(ch.Changes))}, nil
}

// vendorsOut is vendor_figures' answer.
type vendorsOut struct {
	service.Vendors
	Summary string `json:"summary"`
}

func (t *tools) vendorFigures(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	v, err := t.svc.Vendors(ctx, t.p)
	if err != nil {
		return nil, nil, t.toolError(ctx, "vendor_figures", err)
	}
	var spent int64
	var parts []string
	for _, vi := range v.Vendors {
		spent += vi.Month.Spent
		s := fmt.Sprintf("%s %d credits (%d of its own) in %d calls", vi.Name, vi.Month.Spent, vi.Month.VendorCredits, vi.Month.Calls)
		if vi.Out != nil {
			s += " (out: " + vi.Out.Reason + ")"
		}
		parts = append(parts, s)
	}
	sum := fmt.Sprintf("this month since %s: %d credits in all; %s", v.Month, spent, joinOr(parts, "no vendor configured"))
	if len(v.Warnings) > 0 {
		sum += "; warnings: " + joinOr(v.Warnings, "")
	}
	return nil, vendorsOut{Vendors: v, Summary: sum}, nil
}

func joinOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	out := s[0]
	for _, x := range s[1:] {
		out += "; " + x
	}
	return out
}

// watchNotFound names the watch when the service found none.
func watchNotFound(err error) error {
	var nf *service.NotFoundError
	if errors.Is(err, service.ErrNotFound) && !errors.As(err, &nf) {
		return &service.NotFoundError{Noun: "watch"}
	}
	return err
}
