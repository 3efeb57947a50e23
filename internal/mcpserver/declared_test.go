package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/jobs/jobstest"
)

// rpcAnswer is a JSON-RPC answer's envelope.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// The server answers only the methods of the capabilities it declares:
// prompts, logging and completions are declared by no key, so their methods
// are -32601 like a method nobody knows; resources/* are the read scope's.
func TestOnlyDeclaredMethodsAnswered(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	for _, c := range []struct {
		key, method, params string
		found               bool
	}{
		{keyAcme, "prompts/list", `{}`, false},
		{keyAcme, "prompts/get", `{"name":"x"}`, false},
		{keyAcme, "logging/setLevel", `{"level":"debug"}`, false},
		{keyAcme, "completion/complete", `{"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":"b"}}`, false},
		{keyAcme, "resources/subscribe", `{"uri":"enrichq://jobs/x/results"}`, false},
		{keySubmit, "resources/list", `{}`, false},
		{keySubmit, "resources/templates/list", `{}`, false},
		{keyAcme, "tools/list", `{}`, true},
		{keyAcme, "resources/templates/list", `{}`, true},
		{keyRead, "resources/list", `{}`, true},
		{keyAcme, "ping", `{}`, true},
	} {
		resp, body := s.post(t, c.key, `{"jsonrpc":"2.0","id":3,"method":"`+c.method+`","params":`+c.params+`}`)
		var a rpcAnswer
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatalf("%s %s: %s %q: %v", c.key, c.method, resp.Status, body, err)
		}
		switch {
		case c.found && (a.Error != nil || a.Result == nil):
			t.Errorf("%s %s: %s %s, want a result", c.key, c.method, resp.Status, body)
		case !c.found && (resp.StatusCode != http.StatusOK || a.Error == nil || a.Error.Code != -32601 || string(a.ID) != "3" ||
			!strings.Contains(a.Error.Message, c.method)):
			t.Errorf("%s %s: %s %s, want the JSON-RPC error -32601", c.key, c.method, resp.Status, body)
		}
	}
}

// Accept is read one way: a request must accept both application/json and
// text/event-stream (the MCP transport's rule), wildcards count and q=0
// refuses (RFC 9110); no Accept header at all accepts neither by name. A
// request that does not is a 406 with a JSON-RPC error, whatever the
// header's form.
func TestAcceptReadOneWay(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, c := range []struct {
		accept []string // nil: no header
		ok     bool
	}{
		{nil, false},
		{[]string{"application/json, text/event-stream"}, true},
		{[]string{"application/json", "text/event-stream"}, true},
		{[]string{"*/*"}, true},
		{[]string{"application/*, text/*"}, true},
		{[]string{"Application/JSON;q=0.9, text/event-stream;q=0.5"}, true},
		{[]string{"application/json"}, false},
		{[]string{"text/event-stream"}, false},
		{[]string{"text/html"}, false},
		{[]string{""}, false},
		{[]string{"application/json, text/event-stream;q=0"}, false},
		{[]string{"*/*;q=0"}, false},
		{[]string{"application/json, */*;q=0"}, false},
	} {
		header := []string{"Accept", ""}
		if c.accept == nil {
			header = nil
		}
		resp, body := s.postAccept(t, keyAcme, ping, c.accept, header == nil)
		var a rpcAnswer
		err := json.Unmarshal(body, &a)
		switch {
		case c.ok && (resp.StatusCode != http.StatusOK || err != nil || a.Result == nil):
			t.Errorf("Accept %q: %s %s, want the ping's result", c.accept, resp.Status, body)
		case !c.ok && (resp.StatusCode != http.StatusNotAcceptable || err != nil || a.Error == nil || a.Error.Code != -32600 ||
			!strings.Contains(a.Error.Message, "text/event-stream") || resp.Header.Get("Content-Type") != "application/json"):
			t.Errorf("Accept %q: %s %q %s, want a 406 with a JSON-RPC error", c.accept, resp.Status, resp.Header.Get("Content-Type"), body)
		}
	}
}

// Every refusal of /mcp is a JSON-RPC error, not the SDK's plain text: a
// Content-Type that is not JSON (415), a body that is not JSON-RPC (400,
// -32700), one over the size limit (413).
func TestRefusalsAreJSONRPC(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	for _, c := range []struct {
		name, body, contentType string
		status, code            int
	}{
		{"text/plain", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "text/plain", http.StatusUnsupportedMediaType, -32600},
		{"not JSON", `{"jsonrpc":`, "application/json", http.StatusBadRequest, -32700},
		{"too large", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 5<<20) + `"}}`, "application/json", http.StatusRequestEntityTooLarge, -32600},
	} {
		resp, body := s.post(t, keyAcme, c.body, "Content-Type", c.contentType)
		var a rpcAnswer
		if err := json.Unmarshal(body, &a); err != nil || resp.StatusCode != c.status || a.Error == nil || a.Error.Code != c.code ||
			resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %s %q %.200s, want %d with the JSON-RPC error %d", c.name, resp.Status, resp.Header.Get("Content-Type"), body, c.status, c.code)
		}
	}
}

// No tool's input schema says null, and a null argument is refused naming
// it: the schema is what the server takes.
func TestToolArgumentsNeverNull(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	a := s.connect(t, keyAcme)
	res, err := a.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if b, _ := json.Marshal(tool.InputSchema); strings.Contains(string(b), `"null"`) {
			t.Errorf("%s: the input schema admits null: %s", tool.Name, b)
		}
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"estimate_job", map[string]any{"rows": companies(1), "roles": nil}, "invalid_parameter: roles: cannot be null"},
		{"estimate_job", map[string]any{"rows": companies(1), "roles": []string{"CTO"}, "lookups": nil}, "invalid_parameter: lookups: cannot be null"},
		{"submit_job", map[string]any{"rows": companies(1), "roles": []string{"CTO"}, "budget_credits": nil}, "invalid_parameter: budget_credits: cannot be null"},
		{"get_results", map[string]any{"job_id": "x", "fields": []any{"email", nil}}, "invalid_parameter: fields[1]: cannot be null"},
	} {
		if msg := a.refused(t, c.tool, c.args); !strings.HasPrefix(msg, c.want) {
			t.Errorf("%s %v: %q, want %q", c.tool, c.args, msg, c.want)
		}
	}
}
