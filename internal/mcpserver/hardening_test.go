package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A tool's arguments are read exactly and refused in words: a budget above
// 2^53 is not rounded, a fraction or an overflow names no Go type, a control
// character in any string is refused naming the argument, an unknown
// argument and a missing required one are named. Nothing is stored.
func TestArgumentsReadExactly(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	a := s.connect(t, keyAcme)
	list := map[string]any{"rows": companies(1), "roles": []string{"CTO"}}
	big := json.RawMessage(`9007199254740993`) // 2^53+1: float64 makes it ...992
	for _, c := range []struct {
		tool string
		args any
		want string
	}{
		{"submit_job", merge(list, map[string]any{"budget_credits": big}), "budget_credits 9007199254740993 is above"},
		{"submit_job", merge(list, map[string]any{"budget_credits": 10.5}), "invalid_parameter: budget_credits: 10.5 is not a whole number"},
		{"submit_job", merge(list, map[string]any{"budget_credits": json.RawMessage(`1e20`)}), "invalid_parameter: budget_credits: 1e20 is out of range"},
		{"submit_job", merge(list, map[string]any{"budget_credits": json.RawMessage(`99999999999999999999`)}), "budget_credits: 99999999999999999999 is out of range"},
		{"submit_job", merge(list, map[string]any{"budget_credits": "ten"}), "invalid_parameter: budget_credits: must be a whole number, not a string"},
		{"submit_job", map[string]any{"rows": []map[string]any{{"company": "Ini\x00tech"}}, "roles": []string{"CTO"}, "budget_credits": 10},
			"invalid_parameter: rows[0].company: contains the control character U+0000"},
		{"submit_job", merge(list, map[string]any{"budget_credits": 10, "name": "a\x1bb"}), "invalid_parameter: name: contains the control character U+001B"},
		{"submit_job", merge(list, map[string]any{"budget_credits": 10, "idempotency_key": "k\x00"}), "idempotency_key: contains the control character U+0000"},
		{"estimate_job", merge(list, map[string]any{"roles": []string{"C\u0085TO"}}), "roles[0]: contains the control character U+0085"},
		{"estimate_job", merge(list, map[string]any{"salary": 1}), "invalid_parameter: salary: is not a field here"},
		{"job_status", map[string]any{"job_id": "a\x00b"}, "job_id: contains the control character U+0000"},
		{"job_status", map[string]any{}, "invalid_parameter: job_id is required"},
		{"get_results", map[string]any{"job_id": "x", "cursor": "\x00"}, "cursor: contains the control character U+0000"},
		{"raise_budget", map[string]any{"job_id": "x", "budget_credits": 1.5}, "budget_credits: 1.5 is not a whole number"},
	} {
		msg := a.refused(t, c.tool, c.args)
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: %q, want %q", c.tool, c.args, msg, c.want)
		}
		for _, goish := range []string{"int64", "Go struct", "unmarshal", "float64"} {
			if strings.Contains(msg, goish) {
				t.Errorf("%s: %q names Go's %s", c.tool, msg, goish)
			}
		}
	}
	if jobs, rows := storetest.JobsAndRows(t, s.b.Store); jobs != 0 || rows != 0 {
		t.Fatalf("refused calls stored %d jobs, %d rows", jobs, rows)
	}
}

// The server promises no listChanged it cannot push (stateless: no stream).
func TestNoListChanged(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	for _, key := range []string{keyAcme, keyRead, keySubmit} {
		caps := s.connect(t, key).cs.InitializeResult().Capabilities
		if caps.Tools == nil || caps.Tools.ListChanged || (caps.Resources != nil && caps.Resources.ListChanged) || caps.Prompts != nil {
			t.Errorf("%s: capabilities tools %+v, resources %+v, prompts %+v", key, caps.Tools, caps.Resources, caps.Prompts)
		}
		if (caps.Resources != nil) != (key != keySubmit) {
			t.Errorf("%s: resources %+v: the results resources are the read scope's", key, caps.Resources)
		}
	}
}

// /mcp refuses a request from a web page of a foreign origin (403, the
// spec's rule against DNS rebinding) and serves one without Origin (no
// browser) or from an allowed origin.
func TestOriginChecked(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	const list = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, c := range []struct {
		origin string
		want   int
	}{
		{"", http.StatusOK},
		{allowedOrigin, http.StatusOK},
		{"HTTPS://Assistant.example.com/", http.StatusOK},
		{"https://evil.example", http.StatusForbidden},
		{"http://assistant.example.com", http.StatusForbidden}, // another scheme is another origin
		{"null", http.StatusForbidden},
		{s.api.URL, http.StatusForbidden}, // its own Host vouches for nothing: under DNS rebinding they agree
	} {
		var h []string
		if c.origin != "" {
			h = []string{"Origin", c.origin}
		}
		resp, body := s.post(t, keyAcme, list, h...)
		if resp.StatusCode != c.want {
			t.Errorf("Origin %q: %s %s, want %d", c.origin, resp.Status, body, c.want)
		}
		if c.want == http.StatusForbidden && !strings.Contains(string(body), "ENRICHQ_MCP_ALLOWED_ORIGINS") {
			t.Errorf("Origin %q: the refusal %s does not say how to allow it", c.origin, body)
		}
	}
}

// A call of a method nobody knows is the JSON-RPC error -32601 answering
// that call, not a plain-text HTTP 400.
func TestUnknownMethodIsJSONRPCError(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	for _, id := range []string{`7`, `"call-x"`, `0`} {
		resp, body := s.post(t, keyAcme, `{"jsonrpc":"2.0","id":`+id+`,"method":"no/such/method","params":{}}`)
		var answer struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &answer); err != nil || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("id %s: %s %q (%s): %v", id, resp.Status, body, resp.Header.Get("Content-Type"), err)
		}
		if answer.JSONRPC != "2.0" || string(answer.ID) != id || answer.Error.Code != -32601 || !strings.Contains(answer.Error.Message, "no/such/method") {
			t.Errorf("id %s: %s %s", id, resp.Status, body)
		}
	}
	// A known method still works.
	if resp, body := s.post(t, keyAcme, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"result"`) {
		t.Errorf("ping: %s %s", resp.Status, body)
	}
}

// raise_budget on a finished job is refused with the job's state, through
// MCP and REST alike (the service refuses it), and the budget stays.
func TestRaiseBudgetOfFinishedJob(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	a := s.connect(t, keyAcme)
	var st status
	a.call(t, "submit_job", map[string]any{"rows": companies(2), "roles": []string{"CTO"}, "budget_credits": 10}, &st)
	a.call(t, "cancel_job", map[string]any{"job_id": st.ID}, &st)
	if msg := a.refused(t, "raise_budget", map[string]any{"job_id": st.ID, "budget_credits": 20}); msg != "job_finished: the job is already canceled; its budget can no longer change" {
		t.Errorf("raise_budget of a canceled job: %q", msg)
	}
	req, _ := http.NewRequest(http.MethodPatch, s.api.URL+"/v1/jobs/"+st.ID, strings.NewReader(`{"budget_credits": 30}`))
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || body.Error.Code != "job_finished" || !strings.Contains(body.Error.Message, "canceled") {
		t.Errorf("PATCH of a canceled job's budget: %s %+v", resp.Status, body)
	}
	a.call(t, "job_status", map[string]any{"job_id": st.ID}, &st)
	if *st.Credits.Budget != 10 {
		t.Errorf("the budget changed: %d", *st.Credits.Budget)
	}
}

// A submit-only key is offered the tools it can use, and can use each:
// raise_budget and cancel_job need no read scope (as PATCH and cancel in REST).
func TestSubmitOnlyKeyUsesItsTools(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	sub := s.connect(t, keySubmit)
	if got := sub.toolNames(t); !slices.Equal(got, paidTools) {
		t.Fatalf("submit-only key: tools %v, want %v", got, paidTools)
	}
	var est estimate
	sub.call(t, "estimate_job", map[string]any{"rows": companies(2), "roles": []string{"CTO"}}, &est)
	var st status
	sub.call(t, "submit_job", map[string]any{"rows": companies(2), "roles": []string{"CTO"}, "budget_credits": 10}, &st)
	sub.call(t, "raise_budget", map[string]any{"job_id": st.ID, "budget_credits": 20}, &st)
	if st.Credits.Budget == nil || *st.Credits.Budget != 20 {
		t.Fatalf("raised: %+v", st)
	}
	sub.call(t, "cancel_job", map[string]any{"job_id": st.ID}, &st)
	if st.State != "canceled" {
		t.Fatalf("canceled: %+v", st)
	}
}

// budgetsOut is the mcp_budget of a paid tool's answer.
type budgetsOut struct {
	MCPBudget struct {
		JobCeiling int64  `json:"job_ceiling"`
		Day        string `json:"day"`
		Ceiling    int64  `json:"daily_ceiling"`
		Committed  int64  `json:"committed_today"`
		Left       int64  `json:"left_today"`
	} `json:"mcp_budget"`
	BudgetCeiling int64  `json:"budget_ceiling"`
	ID            string `json:"id"`
	Summary       string `json:"summary"`
}

// The daily ceiling: what a key commits through MCP in a UTC day (budgets
// submitted, increases raised) stays under it; every paid answer says what
// is left; a refused or replayed submit commits nothing; the next UTC day
// starts afresh.
func TestDailyCeiling(t *testing.T) {
	t.Parallel()
	clock := newClock("2026-11-20T23:50:00Z")
	s := newStackWith(t, jobstest.Options{NoWorker: true}, func(d *httpapi.Deps) { d.Now = clock.Now })
	d := s.connect(t, keyDaily) // per job 100, per day 250
	list := map[string]any{"rows": companies(1), "roles": []string{"CTO"}}
	var out budgetsOut
	d.call(t, "estimate_job", list, &out)
	if out.MCPBudget.Ceiling != dailyCeiling || out.MCPBudget.Left != dailyCeiling || out.BudgetCeiling != smallCeiling || out.MCPBudget.Day != "2026-11-20" {
		t.Fatalf("estimate before any submit: %+v", out)
	}
	d.call(t, "submit_job", merge(list, map[string]any{"budget_credits": 100, "idempotency_key": "first"}), &out)
	if out.MCPBudget.Committed != 100 || out.MCPBudget.Left != 150 || !strings.Contains(out.Summary, "150 more credits through MCP today") {
		t.Fatalf("after 100: %+v", out)
	}
	// The same submit again: the first job, nothing new committed.
	d.call(t, "submit_job", merge(list, map[string]any{"budget_credits": 100, "idempotency_key": "first"}), &out)
	if out.MCPBudget.Left != 150 {
		t.Fatalf("a replay committed: %+v", out)
	}
	// A submit refused after the check gives its budget back.
	d.refused(t, "submit_job", merge(list, map[string]any{"budget_credits": 100, "lookups": []string{"salary"}}))
	var second budgetsOut
	d.call(t, "submit_job", merge(list, map[string]any{"budget_credits": 50}), &second)
	if second.MCPBudget.Left != 100 {
		t.Fatalf("after 150: %+v", second)
	}
	// A raise counts its increase: 50 -> 100 commits 50.
	d.call(t, "raise_budget", map[string]any{"job_id": second.ID, "budget_credits": 100}, &out)
	if out.MCPBudget.Committed != 200 || out.MCPBudget.Left != 50 {
		t.Fatalf("after the raise: %+v", out)
	}
	msg := d.refused(t, "submit_job", merge(list, map[string]any{"budget_credits": 60}))
	if !strings.HasPrefix(msg, "budget_above_daily_ceiling: budget_credits 60 would commit 60 credits, and this key may commit only 50 more through MCP today (200 of its daily ceiling of 250") {
		t.Fatalf("over the day's ceiling: %q", msg)
	}
	if msg := d.refused(t, "raise_budget", map[string]any{"job_id": out.ID, "budget_credits": 100 + 51}); !strings.Contains(msg, "budget_above_ceiling") {
		t.Fatalf("raise over the per-job ceiling: %q", msg)
	}
	d.call(t, "estimate_job", list, &out)
	if out.BudgetCeiling != 50 || out.MCPBudget.Left != 50 {
		t.Fatalf("estimate with 50 left: %+v", out)
	}
	d.call(t, "submit_job", merge(list, map[string]any{"budget_credits": 50}), &out)
	if out.MCPBudget.Left != 0 {
		t.Fatalf("at the ceiling: %+v", out)
	}
	if msg := d.refused(t, "submit_job", merge(list, map[string]any{"budget_credits": 1})); !strings.Contains(msg, "may commit only 0 more") {
		t.Fatalf("at the ceiling, 1 more: %q", msg)
	}
	// Another key of the tenant has its own day.
	var other budgetsOut
	s.connect(t, keySmall).call(t, "submit_job", merge(list, map[string]any{"budget_credits": 100}), &other)
	if other.MCPBudget.Committed != 100 || other.MCPBudget.Ceiling != 5*smallCeiling {
		t.Fatalf("keySmall (5x its per-job ceiling): %+v", other)
	}
	// Midnight UTC: a new day.
	clock.Set("2026-11-21T00:00:01Z")
	d.call(t, "submit_job", merge(list, map[string]any{"budget_credits": 100}), &out)
	if out.MCPBudget.Day != "2026-11-21" || out.MCPBudget.Committed != 100 {
		t.Fatalf("the next day: %+v", out)
	}
	if jobs, _ := storetest.JobsAndRows(t, s.b.Store); jobs != 5 {
		t.Fatalf("%d jobs stored, want 5", jobs)
	}
}

// Concurrent submits cannot both take the day's last room: of eight
// submits at once that each fit alone, as many pass as the ceiling holds.
func TestDailyCeilingConcurrent(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	const n = 8
	sessions := make([]*session, n)
	for i := range sessions {
		sessions[i] = s.connect(t, keyDaily) // per job 100, per day 250: two fit
	}
	var wg sync.WaitGroup
	results := make([]string, n)
	for i, sess := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := sess.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "submit_job",
				Arguments: map[string]any{"rows": companies(1), "roles": []string{"CTO"}, "budget_credits": 100}})
			switch {
			case err != nil:
				results[i] = "error: " + err.Error()
			case res.IsError:
				results[i] = text(res)
			default:
				results[i] = "ok"
			}
		}()
	}
	wg.Wait()
	ok := 0
	for _, r := range results {
		switch {
		case r == "ok":
			ok++
		case !strings.HasPrefix(r, "budget_above_daily_ceiling"):
			t.Errorf("a submit: %s", r)
		}
	}
	if jobs, _ := storetest.JobsAndRows(t, s.b.Store); ok != 2 || jobs != 2 {
		t.Fatalf("%d submits passed, %d jobs stored; the ceiling holds 2 (%v)", ok, jobs, results)
	}
}
