package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

// Result pages through MCP are small: an assistant reads every token.
const (
	defaultResultsPage = 20
	maxResultsPage     = 100
)

// resultFields are the fields of a result line (service.ResultLine), in its
// order: what get_results' fields may name.
var resultFields = []string{
	"row", "ref", "profile_url", "name", "company", "domain", "input_email", "role", "extra", "state", "reason",
	"found_profile_url", "full_name", "headline", "current_company", "current_role", "location", "company_size",
	"industry", "technographics", "email", "email_confidence", "email_verified", "email_status", "phones", "no_match",
}

// defaultResultFields answer who was found where, and how to reach them.
var defaultResultFields = []string{"row", "ref", "company", "role", "state", "full_name", "current_role", "current_company", "found_profile_url", "email"}

type resultsIn struct {
	JobID  string   `json:"job_id" jsonschema:"the job's id"`
	Fields []string `json:"fields,omitempty" jsonschema:"the fields of each result to return (default row, ref, company, role, state, full_name, current_role, current_company, found_profile_url, email); any of row, ref, profile_url, name, company, domain, input_email, role, extra, state, reason, found_profile_url, full_name, headline, current_company, current_role, location, company_size, industry, technographics, email, email_confidence, email_verified, email_status, phones, no_match"`
	State  string   `json:"state,omitempty" jsonschema:"only results in this state: matched, no_match, failed, skipped (or pending, in_flight, retry_wait while the job runs)"`
	Limit  int      `json:"limit,omitempty" jsonschema:"results per page, 1 to 100 (default 20)"`
	Cursor string   `json:"cursor,omitempty" jsonschema:"next_cursor of the page before, for the next page"`
}

// resultsOut is get_results' answer.
type resultsOut struct {
	JobID      string           `json:"job_id"`
	Fields     []string         `json:"fields"`
	Results    []map[string]any `json:"results"`
	NextCursor *string          `json:"next_cursor"`
}

func (t *tools) addResultTools(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "get_results",
		Title: "A page of a job's results",
		Description: "What a job found, row by row, in row order: a small page (default 20) of the fields asked for; " +
			"next_cursor pages on. Works while the job runs (rows not yet done have state pending or in_flight).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.getResults)
}

func (t *tools) getResults(ctx context.Context, _ *mcp.CallToolRequest, in resultsIn) (*mcp.CallToolResult, any, error) {
	fields := in.Fields
	if len(fields) == 0 {
		fields = defaultResultFields
	}
	for _, f := range fields {
		if !slices.Contains(resultFields, f) {
			return nil, nil, refusef("invalid_parameter: fields: %q is not a field of a result; the fields are %s", clip(f), strings.Join(resultFields, ", "))
		}
	}
	limit := in.Limit
	if limit <= 0 {
		limit = defaultResultsPage
	}
	page, err := t.svc.Results(ctx, t.p, in.JobID, service.ResultsQuery{State: domain.RowState(in.State), Cursor: in.Cursor, Limit: min(limit, maxResultsPage)})
	if err != nil {
		return nil, nil, t.toolError(ctx, "get_results", err)
	}
	out := resultsOut{JobID: page.JobID, Fields: fields, Results: make([]map[string]any, 0, len(page.Results)), NextCursor: page.NextCursor}
	for _, r := range page.Results {
		line, err := pick(service.LineOf(r), fields)
		if err != nil {
			return nil, nil, t.toolError(ctx, "get_results", err)
		}
		out.Results = append(out.Results, line)
	}
	return nil, out, nil
}

// pick is the fields of a result line, as the REST API writes them.
func pick(l service.ResultLine, fields []string) (map[string]any, error) {
	b, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		out[f] = all[f]
	}
	return out, nil
}

// clip shortens a caller's value quoted back in a message.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
