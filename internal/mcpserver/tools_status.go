package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

// jobIn names a job.
type jobIn struct {
	JobID string `json:"job_id" jsonschema:"the job's id, as submit_job or list_jobs gave it"`
}

type listJobsIn struct {
	Limit  int    `json:"limit,omitempty" jsonschema:"jobs per page, 1 to 50 (default 10)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the page before, for the next page"`
}

// List paging through MCP: an assistant reads every token, so pages are small.
const (
	defaultJobsPage = 10
	maxJobsPage     = 50
)

func (t *tools) addStatusTools(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "job_status",
		Title: "A job's status",
		Description: "A job's state (queued, running, paused, completed, canceled, failed) and why, its rows by state, " +
			"credits (budget, reserved, spent), progress from 0 to 1 and the seconds left, when known.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.jobStatus)
	addTool(s, &mcp.Tool{
		Name:        "list_jobs",
		Title:       "List jobs",
		Description: "This account's jobs, newest first, each with its status; next_cursor pages on.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.listJobs)
}

// statusView is a job's status as the tools answer it: the REST status body
// and a sentence saying it.
type statusView struct {
	service.JobStatus
	Summary string `json:"summary"`
}

func statusOf(st service.JobStatus) statusView {
	return statusView{JobStatus: st, Summary: summary(st)}
}

// summary says a status in one sentence.
func summary(st service.JobStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s is %s", st.ID, st.State)
	if st.StateReason != "" {
		fmt.Fprintf(&b, " (%s)", st.StateReason)
	}
	r := st.Rows
	fmt.Fprintf(&b, ": %d of %d rows done (%d matched, %d no match, %d failed, %d skipped)",
		r.Matched+r.NoMatch+r.Failed+r.Skipped, r.Total, r.Matched, r.NoMatch, r.Failed, r.Skipped)
	fmt.Fprintf(&b, "; %d credits spent", st.Credits.Spent)
	if st.Credits.Budget != nil {
		fmt.Fprintf(&b, " of a budget of %d", *st.Credits.Budget)
	}
	if st.State == domain.JobPaused && strings.Contains(st.StateReason, "budget") {
		b.WriteString("; raise_budget lets it go on")
	}
	if st.FinishedAt == nil && st.ETASeconds != nil {
		fmt.Fprintf(&b, "; about %s left", seconds(float64(*st.ETASeconds)))
	}
	return b.String()
}

func (t *tools) jobStatus(ctx context.Context, _ *mcp.CallToolRequest, in jobIn) (*mcp.CallToolResult, any, error) {
	st, err := t.svc.JobStatus(ctx, t.p, in.JobID)
	if err != nil {
		return nil, nil, t.toolError(ctx, "job_status", err)
	}
	return nil, statusOf(st), nil
}

// jobsOut is list_jobs' answer.
type jobsOut struct {
	Jobs       []statusView `json:"jobs"`
	NextCursor *string      `json:"next_cursor"`
}

func (t *tools) listJobs(ctx context.Context, _ *mcp.CallToolRequest, in listJobsIn) (*mcp.CallToolResult, any, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = defaultJobsPage
	}
	list, err := t.svc.ListJobs(ctx, t.p, in.Cursor, min(limit, maxJobsPage))
	if err != nil {
		return nil, nil, t.toolError(ctx, "list_jobs", err)
	}
	out := jobsOut{Jobs: make([]statusView, len(list.Jobs)), NextCursor: list.NextCursor}
	for i, j := range list.Jobs {
		out.Jobs[i] = statusOf(j)
	}
	return nil, out, nil
}
