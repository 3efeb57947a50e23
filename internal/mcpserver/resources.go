package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/service"
)

// ResultsTemplate is the URI template of a finished job's results.
const ResultsTemplate = "enrichq://jobs/{id}/results"

// MaxResourceResults caps the results in one resource: a bigger job's
// results are read with get_results, page by page.
const MaxResourceResults = 1000

func (t *tools) addResources(s *mcp.Server) {
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "job_results",
		Title:       "A finished job's results",
		URITemplate: ResultsTemplate,
		MIMEType:    "application/json",
		Description: "Every result of a finished job (completed, canceled or failed), as JSON: one object per row, " +
			"the fields of the REST API's results. At most 1000 rows; truncated says when get_results must page on.",
	}, t.readResults)
}

// resultsResource is the body of a results resource.
type resultsResource struct {
	Job        statusView           `json:"job"`
	Results    []service.ResultLine `json:"results"`
	Truncated  bool                 `json:"truncated"`
	NextCursor *string              `json:"next_cursor"` // for get_results, when truncated
}

func (t *tools) readResults(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := jobOfResultsURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	st, err := t.svc.JobStatus(ctx, t.p, id)
	switch {
	case errors.Is(err, service.ErrNotFound):
		// Another tenant's job too: nothing says it exists.
		return nil, mcp.ResourceNotFoundError(uri)
	case err != nil:
		return nil, t.toolError(ctx, "resources/read", err)
	}
	if st.FinishedAt == nil {
		return nil, refusef("job_not_finished: job %s is %s; its results are a resource once it has finished (get_results reads them now)", st.ID, st.State)
	}
	// The first MaxResourceResults lines, as one download of them.
	body := resultsResource{Job: statusOf(st), Results: []service.ResultLine{}}
	next, err := t.svc.DownloadResults(ctx, t.p, id, service.DownloadQuery{Limit: MaxResourceResults},
		func(service.Download) error { return nil },
		func(r service.Result) error {
			body.Results = append(body.Results, service.LineOf(r))
			return nil
		})
	if err != nil {
		return nil, t.toolError(ctx, "resources/read", err)
	}
	body.Truncated, body.NextCursor = next != nil, next
	b, err := json.Marshal(body)
	if err != nil {
		return nil, t.toolError(ctx, "resources/read", err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

// jobOfResultsURI is the job id of "enrichq://jobs/{id}/results".
func jobOfResultsURI(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, "enrichq://jobs/")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/results")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}
