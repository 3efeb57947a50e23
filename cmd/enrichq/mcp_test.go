package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/apitest"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// mcpCeiling is the MCP budget ceiling of the test API's key.
const mcpCeiling = 10000

// stdioSession runs `enrichq mcp` in-process on pipes and connects the
// SDK's client to its stdin and stdout, as a desktop assistant would.
// wire receives every JSON-RPC message, both ways.
func stdioSession(t *testing.T, apiURL string, wire io.Writer) (*mcp.ClientSession, func() (error, string)) {
	t.Helper()
	return stdioSessionKey(t, apiURL, apiKey, wire)
}

func stdioSessionKey(t *testing.T, apiURL, key string, wire io.Writer) (*mcp.ClientSession, func() (error, string)) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	env := map[string]string{"ENRICHQ_API_URL": apiURL, "ENRICHQ_API_KEY": key}
	var stderr syncBuf
	done := make(chan error, 1)
	go func() {
		err := run(context.Background(), []string{"enrichq", "mcp"}, func(k string) string { return env[k] }, inR, outW, &stderr)
		outW.Close()
		done <- err
	}()
	var tr mcp.Transport = &mcp.IOTransport{Reader: outR, Writer: inW}
	if wire != nil {
		tr = &mcp.LoggingTransport{Transport: tr, Writer: wire}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop-assistant", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, stderr.String())
	}
	// wait ends the session (the assistant quits) and returns what enrichq mcp returned.
	wait := sync.OnceValues(func() (error, string) {
		_ = cs.Close()
		return <-done, stderr.String()
	})
	t.Cleanup(func() { wait() })
	return cs, wait
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil {
		if res.IsError {
			t.Fatalf("%s: tool error %s", name, toolText(res))
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return res
}

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// enrichq mcp over stdio: the API's tools, and a whole job from estimate to
// results through them; a submit without a budget is a tool error and the
// session goes on.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{})
	var wire syncBuf
	cs, wait := stdioSession(t, s.url, &wire)

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s without a description or schema", tool.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"cancel_job", "create_watch", "estimate_job", "estimate_watch", "get_results", "job_status", "list_jobs",
		"list_watches", "raise_budget", "run_watch", "submit_job", "vendor_figures", "watch_changes"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	list := map[string]any{"rows": []map[string]any{{"company": "Initech GmbH"}, {"company": "Hooli Inc"}, {"name": "Ada Lovelace", "domain": "analytical.example"}},
		"roles": []string{"CTO"}, "lookups": []string{"profile", "email"}}
	var est struct {
		Rows    int `json:"rows"`
		Credits struct{ Min, Max int64 }
	}
	callTool(t, cs, "estimate_job", list, &est)
	if est.Rows != 3 || est.Credits.Max == 0 {
		t.Fatalf("estimate %+v", est)
	}
	if res := callTool(t, cs, "submit_job", list, nil); !res.IsError || !strings.Contains(toolText(res), "budget_required") {
		t.Fatalf("submit without a budget: %s", toolText(res))
	}
	list["budget_credits"] = est.Credits.Max
	var st struct {
		ID      string         `json:"id"`
		State   string         `json:"state"`
		Rows    map[string]int `json:"rows"`
		Credits struct{ Spent int64 }
	}
	callTool(t, cs, "submit_job", list, &st)
	s.b.WaitJob(t, st.ID, domain.JobCompleted)
	callTool(t, cs, "job_status", map[string]any{"job_id": st.ID}, &st)
	if st.State != "completed" || st.Rows["total"] != 3 {
		t.Fatalf("status %+v", st)
	}
	if spent := s.b.CheckMoney(t, st.ID); spent != st.Credits.Spent {
		t.Fatalf("status says %d spent, ledger %d", st.Credits.Spent, spent)
	}
	var page struct {
		Results []map[string]any `json:"results"`
	}
	callTool(t, cs, "get_results", map[string]any{"job_id": st.ID, "fields": []string{"row", "state", "full_name"}}, &page)
	if len(page.Results) != 3 || page.Results[2]["row"] != float64(3) {
		t.Fatalf("results %v", page.Results)
	}
	rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "enrichq://jobs/" + st.ID + "/results"})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, `"results":[`) {
		t.Fatalf("resource: %v %+v", err, rr)
	}

	if err, stderr := wait(); err != nil {
		t.Fatalf("enrichq mcp: %v; stderr %s", err, stderr)
	}
	if !strings.Contains(wire.String(), `"method":"tools/call"`) {
		t.Fatalf("no tools/call on the wire:\n%s", wire.String())
	}
	t.Logf("the stdio wire:\n%s", wire.String())
}

// When the API goes away mid-session, a call is a tool error, not the end
// of the assistant's session.
func TestMCPStdioAPIGone(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	cs, wait := stdioSession(t, s.url, nil)
	s.api.Close()
	res := callTool(t, cs, "list_jobs", map[string]any{}, nil)
	if !res.IsError || !strings.Contains(toolText(res), "unavailable: the enrichq API at "+s.url+" did not answer") {
		t.Fatalf("list_jobs with the API gone: %s", toolText(res))
	}
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatalf("the session ended: %v", err)
	}
	if err, stderr := wait(); err != nil {
		t.Fatalf("enrichq mcp: %v; stderr %s", err, stderr)
	}
}

// Through stdio, a read key gets the read tools only, as on /mcp: the
// relay offers what the API offers its key.
func TestMCPStdioReadKey(t *testing.T) {
	t.Parallel()
	api := apitest.Start(t, apitest.Options{Pipeline: jobstest.Options{NoWorker: true}, Stored: true,
		Deps: func(d *httpapi.Deps) { d.MCPMaxBudget = mcpCeiling }})
	_, key := api.CreateKey(t, "acme", "etl", []domain.Scope{domain.ScopeRead}, nil)
	cs, wait := stdioSessionKey(t, api.URL, key, nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"estimate_watch", "get_results", "job_status", "list_jobs", "list_watches", "vendor_figures", "watch_changes"}; !slices.Equal(names, want) {
		t.Fatalf("read key's tools %v, want %v", names, want)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "submit_job",
		Arguments: map[string]any{"rows": []map[string]any{{"company": "Initech"}}, "roles": []string{"CTO"}, "budget_credits": 10}})
	if err == nil && !res.IsError {
		t.Fatalf("a read key submitted: %s", toolText(res))
	}
	if jobs, _ := storetest.JobsAndRows(t, api.Store); jobs != 0 {
		t.Fatalf("%d jobs stored", jobs)
	}
	if err, stderr := wait(); err != nil {
		t.Fatalf("enrichq mcp: %v; stderr %s", err, stderr)
	}
}

// syncBuf is a bytes.Buffer safe for concurrent writers.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The relay says what went wrong in an assistant's words: a key the API
// refuses at start is named as refused (not "cannot reach the API"); a key
// revoked mid-session makes each call a tool error saying so, not the
// SDK's "rejected by transport"; the relay promises no listChanged.
func TestMCPStdioRefusedKey(t *testing.T) {
	t.Parallel()
	api := apitest.Start(t, apitest.Options{Pipeline: jobstest.Options{NoWorker: true}, Stored: true,
		Deps: func(d *httpapi.Deps) { d.MCPMaxBudget = mcpCeiling }})
	b := api.Bundle
	kID, key := api.CreateKey(t, "acme", "assistant", nil, nil)
	var err error

	// A wrong key: enrichq mcp stops at once, saying the key was refused.
	env := map[string]string{"ENRICHQ_API_URL": api.URL, "ENRICHQ_API_KEY": "eq_not_a_key_of_this_api"}
	var stdout, stderr bytes.Buffer
	err = run(context.Background(), []string{"enrichq", "mcp"}, func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "refused the key") || strings.Contains(err.Error(), "cannot reach") || stdout.Len() != 0 {
		t.Fatalf("a wrong key: %v; stdout %q", err, stdout.String())
	}

	cs, wait := stdioSessionKey(t, api.URL, key, nil)
	caps := cs.InitializeResult().Capabilities
	if caps.Tools == nil || caps.Tools.ListChanged || caps.Resources == nil || caps.Resources.ListChanged {
		t.Errorf("relay capabilities: tools %+v, resources %+v", caps.Tools, caps.Resources)
	}
	if err := b.Store.RevokeAPIKey(context.Background(), kID); err != nil {
		t.Fatal(err)
	}
	res := callTool(t, cs, "list_jobs", map[string]any{}, nil)
	if msg := toolText(res); !res.IsError || !strings.HasPrefix(msg, "unauthorized: the enrichq API at "+api.URL+" refused the key") || strings.Contains(msg, "transport") {
		t.Fatalf("a call with the key revoked: %s", msg)
	}
	if err, stderr := wait(); err != nil {
		t.Fatalf("enrichq mcp: %v; stderr %s", err, stderr)
	}
}
