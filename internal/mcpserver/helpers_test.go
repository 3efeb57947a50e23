package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/httpapi/apitest"
	"github.com/enrichq/enrichq/internal/httpapi/openapitest"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
)

// Keys of the tests: tenant acme with every scope (the default ceiling),
// read only, a small ceiling and none; tenant beta.
const (
	keyAcme      = "mcp-key-acme-all"
	keyRead      = "mcp-key-acme-read"
	keySmall     = "mcp-key-acme-small"
	keyNoCeiling = "mcp-key-acme-zero"
	keyBeta      = "mcp-key-beta-all"
	keySubmit    = "mcp-key-acme-submit"
	keyDaily     = "mcp-key-acme-daily"

	defaultCeiling = 5000
	smallCeiling   = 100
	// dailyCeiling is keyDaily's own daily ceiling, its per-job one smallCeiling.
	dailyCeiling = 250

	// allowedOrigin is the one web origin the test API lets call /mcp.
	allowedOrigin = "https://assistant.example.com"
)

func testKeys() apitest.Keys {
	rs := []domain.Scope{domain.ScopeRead, domain.ScopeSubmit}
	return apitest.Keys{
		keyAcme:      {Tenant: "acme", KeyID: "all", Scopes: domain.Scopes},
		keyRead:      {Tenant: "acme", KeyID: "read", Scopes: []domain.Scope{domain.ScopeRead}},
		keySmall:     {Tenant: "acme", KeyID: "small", Scopes: rs, MCPMaxBudget: new(int64(smallCeiling))},
		keyNoCeiling: {Tenant: "acme", KeyID: "zero", Scopes: rs, MCPMaxBudget: new(int64(0))},
		keyBeta:      {Tenant: "beta", KeyID: "beta", Scopes: rs},
		keySubmit:    {Tenant: "acme", KeyID: "submit", Scopes: []domain.Scope{domain.ScopeSubmit}},
		keyDaily:     {Tenant: "acme", KeyID: "daily", Scopes: rs, MCPMaxBudget: new(int64(smallCeiling)), MCPMaxDailyBudget: new(int64(dailyCeiling))},
	}
}

// stack is the API (with /mcp) over real Postgres and Redis, a worker and
// the fake vendor.
type stack struct {
	b   *jobstest.Bundle
	api *httptest.Server
}

func newStack(t *testing.T, o ...jobstest.Options) *stack {
	t.Helper()
	return newStackWith(t, append(o, jobstest.Options{})[0], nil)
}

func newStackWith(t *testing.T, o jobstest.Options, adjust func(*httpapi.Deps)) *stack {
	t.Helper()
	s := apitest.Start(t, apitest.Options{Pipeline: o, Keys: testKeys(), Deps: func(d *httpapi.Deps) {
		d.MCPMaxBudget, d.MCPAllowedOrigins = defaultCeiling, []string{allowedOrigin}
		if adjust != nil {
			adjust(d)
		}
	}})
	return &stack{b: s.Bundle, api: s.API}
}

func (s *stack) post(t *testing.T, key, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.api.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Transport: checked(t, nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

// checked is next with every answer checked against openapi.json.
func checked(t *testing.T, next http.RoundTripper) http.RoundTripper {
	return openapitest.New(t, httpapi.OpenAPIDocument()).Transport(t, next)
}

// bearer adds an API key to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// connect is the SDK's client on /mcp with key.
func (s *stack) connect(t *testing.T, key string) *session {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-assistant", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.api.URL + "/mcp",
		HTTPClient: &http.Client{Transport: checked(t, bearer{key})}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect with %s: %v", key, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &session{cs: cs}
}

// session is a client session that keeps a transcript of its calls.
type session struct {
	cs         *mcp.ClientSession
	transcript strings.Builder
}

// toolNames lists the tools the server offers, sorted.
func (s *session) toolNames(t *testing.T) []string {
	t.Helper()
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// describeTools is the tools list as an assistant reads it: name, title,
// parameters (* required) and description.
func (s *session) describeTools(t *testing.T) string {
	t.Helper()
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, tool := range res.Tools {
		schema, _ := tool.InputSchema.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		req, _ := schema["required"].([]any)
		var params []string
		for name := range props {
			if slices.Contains(req, any(name)) {
				name += "*"
			}
			params = append(params, name)
		}
		slices.Sort(params)
		fmt.Fprintf(&b, "%s (%s) — %s\n    params: %s\n    %s\n", tool.Name, tool.Title, annotations(tool.Annotations), strings.Join(params, ", "), tool.Description)
	}
	return b.String()
}

func annotations(a *mcp.ToolAnnotations) string {
	switch {
	case a == nil:
		return ""
	case a.ReadOnlyHint:
		return "read-only"
	case a.DestructiveHint != nil && *a.DestructiveHint:
		return "destructive"
	}
	return "writes"
}

// call calls a tool that must succeed and decodes its structured answer into out.
func (s *session) call(t *testing.T, name string, args any, out any) {
	t.Helper()
	res := s.raw(t, name, args)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: decode %s: %v", name, b, err)
	}
}

// refused calls a tool that must answer a tool error, and returns its message.
func (s *session) refused(t *testing.T, name string, args any) string {
	t.Helper()
	res := s.raw(t, name, args)
	if !res.IsError {
		t.Fatalf("%s: want a tool error, got %s", name, text(res))
	}
	return text(res)
}

func (s *session) raw(t *testing.T, name string, args any) *mcp.CallToolResult {
	t.Helper()
	a, _ := json.Marshal(args)
	fmt.Fprintf(&s.transcript, "→ %s %s\n", name, a)
	res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	fmt.Fprintf(&s.transcript, "← %s\n", brief(res))
	return res
}

// brief is what a transcript shows of an answer: the error, or the summary
// and the fields an assistant acts on.
func brief(res *mcp.CallToolResult) string {
	if res.IsError {
		return "error: " + text(res)
	}
	m, _ := res.StructuredContent.(map[string]any)
	if s, ok := m["summary"].(string); ok {
		return s
	}
	if jobs, ok := m["jobs"].([]any); ok {
		var lines []string
		for _, j := range jobs {
			s, _ := j.(map[string]any)["summary"].(string)
			lines = append(lines, s)
		}
		return fmt.Sprintf("%d jobs: %s", len(jobs), strings.Join(lines, "; "))
	}
	b, _ := json.Marshal(res.StructuredContent)
	return string(b)
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// clock is a settable clock for the API's Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock(rfc3339 string) *clock {
	c := &clock{}
	c.Set(rfc3339)
	return c
}

func (c *clock) Set(rfc3339 string) {
	t, err := time.Parse(time.RFC3339, rfc3339)
	if err != nil {
		panic(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// postAccept posts body with the Accept header values accept (none at all
// when omit).
func (s *stack) postAccept(t *testing.T, key, body string, accept []string, omit bool) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.api.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	if !omit {
		req.Header["Accept"] = accept
	}
	resp, err := (&http.Client{Transport: checked(t, nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}
