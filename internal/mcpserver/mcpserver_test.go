package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/httpapi/apitest"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

var (
	// paidTools are a submit-only key's: run_watch reads the watch first.
	paidTools = []string{"cancel_job", "create_watch", "estimate_job", "raise_budget", "submit_job"}
	readTools = []string{"estimate_watch", "get_results", "job_status", "list_jobs", "list_watches", "vendor_figures", "watch_changes"}
	allTools  = []string{"cancel_job", "create_watch", "estimate_job", "estimate_watch", "get_results", "job_status", "list_jobs",
		"list_watches", "raise_budget", "run_watch", "submit_job", "vendor_figures", "watch_changes"}
)

// companies is an inline list of n companies.
func companies(n int) []map[string]any {
	rows := make([]map[string]any, n)
	for i := range rows {
		rows[i] = map[string]any{"ref": "crm-" + string(rune('a'+i)), "company": "Company " + string(rune('A'+i)) + " AG"}
	}
	return rows
}

type status struct {
	ID      string         `json:"id"`
	State   string         `json:"state"`
	Reason  string         `json:"state_reason"`
	Rows    map[string]int `json:"rows"`
	Credits struct {
		Budget *int64 `json:"budget"`
		Spent  int64  `json:"spent"`
	} `json:"credits"`
	Summary string `json:"summary"`
}

type estimate struct {
	Rows    int `json:"rows"`
	Credits struct {
		Min int64 `json:"min"`
		Max int64 `json:"max"`
	} `json:"credits"`
	Seconds       float64 `json:"seconds"`
	BudgetCeiling int64   `json:"budget_ceiling"`
	Summary       string  `json:"summary"`
}

// A key sees the tools of its scopes: every tool with read and submit, the
// read tools (and the results resource) only with read.
func TestToolsFollowScopes(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	all := s.connect(t, keyAcme)
	if got := all.toolNames(t); !slices.Equal(got, allTools) {
		t.Errorf("read+submit key: tools %v, want %v", got, allTools)
	}
	t.Logf("the tools as an assistant sees them:\n%s", all.describeTools(t))
	read := s.connect(t, keyRead)
	if got := read.toolNames(t); !slices.Equal(got, readTools) {
		t.Errorf("read key: tools %v, want %v", got, readTools)
	}
	tmpl, err := read.cs.ListResourceTemplates(context.Background(), nil)
	if err != nil || len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != "enrichq://jobs/{id}/results" {
		t.Fatalf("read key: resource templates %+v, %v", tmpl, err)
	}
	// A read key is refused the paid tools: they do not exist for it.
	for _, name := range paidTools {
		res, err := read.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"job_id": "x"}})
		if err == nil && !res.IsError {
			t.Errorf("read key called %s: %s", name, text(res))
		}
	}
	if jobs, rows := storetest.JobsAndRows(t, s.b.Store); jobs != 0 || rows != 0 {
		t.Errorf("%d jobs, %d rows stored", jobs, rows)
	}
	// No key, or an unknown one: no session at all. A known key is served
	// whatever the Host (the API behind a reverse proxy on the same machine).
	for _, c := range []struct {
		key  string
		want int
	}{{"", http.StatusUnauthorized}, {"not-a-key", http.StatusUnauthorized}, {keyRead, http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodPost, s.api.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Host = "enrichq.example.com"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("key %q: %s %s, want %d", c.key, resp.Status, body, c.want)
		}
	}
}

// A whole job through MCP: estimate (the REST dry run's figures), submit,
// status, results in small pages of chosen fields, the results resource;
// what the job spent is what the vendor billed.
func TestWholeJob(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	a := s.connect(t, keyAcme)
	rows := companies(6)
	list := map[string]any{"rows": rows, "roles": []string{"VP Sales"}, "lookups": []string{"profile", "email"}}

	var est estimate
	a.call(t, "estimate_job", list, &est)
	if est.Rows != 6 || est.Credits.Max <= 0 || est.Credits.Min > est.Credits.Max || est.BudgetCeiling != defaultCeiling {
		t.Fatalf("estimate %+v", est)
	}
	// The REST dry run of the same list says the same.
	body, _ := json.Marshal(list)
	req, _ := http.NewRequest(http.MethodPost, s.api.URL+"/v1/jobs?dry_run=true", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var rest estimate
	if err := json.NewDecoder(resp.Body).Decode(&rest); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if rest.Credits != est.Credits || rest.Rows != est.Rows || rest.Seconds != est.Seconds {
		t.Fatalf("REST estimates %+v, MCP %+v", rest, est)
	}

	if msg := a.refused(t, "submit_job", merge(list, map[string]any{"name": "mcp test"})); !strings.HasPrefix(msg, "budget_required") {
		t.Fatalf("submit without a budget: %s", msg)
	}
	var st status
	a.call(t, "submit_job", merge(list, map[string]any{"name": "mcp test", "budget_credits": est.Credits.Max}), &st)
	if st.ID == "" || st.Rows["total"] != 6 || st.Credits.Budget == nil || *st.Credits.Budget != est.Credits.Max {
		t.Fatalf("submitted %+v", st)
	}
	s.b.WaitJob(t, st.ID, domain.JobCompleted)
	a.call(t, "job_status", map[string]any{"job_id": st.ID}, &st)
	if st.State != "completed" || st.Rows["matched"]+st.Rows["no_match"] != 6 || st.Credits.Spent > est.Credits.Max || st.Credits.Spent < est.Credits.Min {
		t.Fatalf("finished %+v, estimate %+v", st, est)
	}
	if spent := s.b.CheckMoney(t, st.ID); spent != st.Credits.Spent {
		t.Fatalf("job_status says %d spent, the ledger %d", st.Credits.Spent, spent)
	}

	var list1 struct {
		Jobs []status `json:"jobs"`
	}
	a.call(t, "list_jobs", map[string]any{}, &list1)
	if len(list1.Jobs) != 1 || list1.Jobs[0].ID != st.ID {
		t.Fatalf("list_jobs %+v", list1)
	}

	// Results, two at a time, the fields asked for.
	type page struct {
		Results    []map[string]any `json:"results"`
		NextCursor *string          `json:"next_cursor"`
	}
	fields := []string{"row", "ref", "state", "full_name", "email"}
	var got []map[string]any
	args := map[string]any{"job_id": st.ID, "fields": fields, "limit": 2}
	for {
		var p page
		a.call(t, "get_results", args, &p)
		for _, r := range p.Results {
			if len(r) != len(fields) {
				t.Fatalf("result with fields %v, want %v", r, fields)
			}
		}
		got = append(got, p.Results...)
		if p.NextCursor == nil {
			break
		}
		args["cursor"] = *p.NextCursor
	}
	if len(got) != 6 || got[0]["ref"] != "crm-a" || got[5]["ref"] != "crm-f" {
		t.Fatalf("results %v", got)
	}
	matched := 0
	for _, r := range got {
		if r["state"] == "matched" {
			matched++
			if r["full_name"] == nil {
				t.Errorf("matched without a name: %v", r)
			}
		}
	}
	if matched != st.Rows["matched"] {
		t.Errorf("%d matched results, status says %d", matched, st.Rows["matched"])
	}
	msg := a.refused(t, "get_results", map[string]any{"job_id": st.ID, "fields": []string{"salary"}})
	if !strings.Contains(msg, `"salary" is not a field`) {
		t.Errorf("unknown field: %s", msg)
	}

	// The finished job's results as a resource.
	uri := "enrichq://jobs/" + st.ID + "/results"
	rr, err := a.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Job       status           `json:"job"`
		Results   []map[string]any `json:"results"`
		Truncated bool             `json:"truncated"`
	}
	if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != "application/json" || json.Unmarshal([]byte(rr.Contents[0].Text), &res) != nil {
		t.Fatalf("resource %+v", rr.Contents)
	}
	if res.Job.ID != st.ID || len(res.Results) != 6 || res.Truncated || res.Results[0]["ref"] != "crm-a" {
		t.Fatalf("resource body %+v", res)
	}
	fmt.Fprintf(&a.transcript, "→ resources/read %s\n← %d results, truncated %v; row 2: %v, %v, %v\n", uri, len(res.Results), res.Truncated,
		res.Results[1]["full_name"], res.Results[1]["headline"], res.Results[1]["email"])
	t.Logf("transcript:\n%s", a.transcript.String())
}

// submit_job refuses a job without a budget, above the key's ceiling, and
// any budget with a ceiling of 0; nothing is stored. raise_budget holds to
// the same ceiling and only raises.
func TestBudgetCeiling(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true}) // the job waits: it can be raised and canceled
	list := map[string]any{"rows": companies(2), "roles": []string{"CTO"}}
	small := s.connect(t, keySmall)
	for _, c := range []struct {
		key  string
		args map[string]any
		want string
	}{
		{keyAcme, list, "budget_required: submit_job needs budget_credits"},
		{keyAcme, merge(list, map[string]any{"budget_credits": defaultCeiling + 1}), "budget_above_ceiling: budget_credits 5001 is above this key's MCP ceiling of 5000 credits"},
		{keyAcme, merge(list, map[string]any{"budget_credits": 0}), "invalid_options"},
		{keySmall, merge(list, map[string]any{"budget_credits": smallCeiling + 1}), "ceiling of 100 credits"},
		{keyNoCeiling, merge(list, map[string]any{"budget_credits": 1}), "budget_refused"},
		{keyAcme, merge(list, map[string]any{"budget_credits": 10, "lookups": []string{"salary"}}), "invalid_options"},
		{keyAcme, map[string]any{"budget_credits": 10}, "no list"},
	} {
		if msg := s.connect(t, c.key).refused(t, "submit_job", c.args); !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: %q, want %q", c.key, c.args, msg, c.want)
		}
	}
	if jobs, rows := storetest.JobsAndRows(t, s.b.Store); jobs != 0 || rows != 0 {
		t.Fatalf("refused submits stored %d jobs, %d rows", jobs, rows)
	}

	// Within the ceiling: stored; raised up to the ceiling, never beyond, never down.
	var st status
	small.call(t, "submit_job", merge(list, map[string]any{"budget_credits": 10}), &st)
	for _, c := range []struct {
		budget int
		want   string
	}{
		{smallCeiling + 1, "budget_above_ceiling"},
		{10, "not above the job's budget of 10"},
		{5, "raise_budget only raises"},
	} {
		if msg := small.refused(t, "raise_budget", map[string]any{"job_id": st.ID, "budget_credits": c.budget}); !strings.Contains(msg, c.want) {
			t.Errorf("raise to %d: %q, want %q", c.budget, msg, c.want)
		}
	}
	small.call(t, "raise_budget", map[string]any{"job_id": st.ID, "budget_credits": smallCeiling}, &st)
	if *st.Credits.Budget != smallCeiling {
		t.Fatalf("raised: %+v", st)
	}
	// Its results are no resource until it has finished.
	if _, err := small.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "enrichq://jobs/" + st.ID + "/results"}); err == nil ||
		!strings.Contains(err.Error(), "job_not_finished") {
		t.Errorf("the results resource of a queued job: %v", err)
	}
	small.call(t, "cancel_job", map[string]any{"job_id": st.ID}, &st)
	if st.State != "canceled" {
		t.Fatalf("canceled: %+v", st)
	}
}

// Another tenant's key sees nothing of acme's jobs through MCP, as through REST.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	var st status
	s.connect(t, keyAcme).call(t, "submit_job", map[string]any{"rows": companies(2), "roles": []string{"CTO"}, "budget_credits": 50}, &st)
	s.b.WaitJob(t, st.ID, domain.JobCompleted)

	beta := s.connect(t, keyBeta)
	for _, tool := range []string{"job_status", "get_results", "cancel_job"} {
		if msg := beta.refused(t, tool, map[string]any{"job_id": st.ID}); msg != "not_found: no such job" {
			t.Errorf("beta %s on acme's job: %q", tool, msg)
		}
	}
	if msg := beta.refused(t, "raise_budget", map[string]any{"job_id": st.ID, "budget_credits": 60}); msg != "not_found: no such job" {
		t.Errorf("beta raise_budget on acme's job: %q", msg)
	}
	var list struct {
		Jobs []status `json:"jobs"`
	}
	beta.call(t, "list_jobs", map[string]any{}, &list)
	if len(list.Jobs) != 0 {
		t.Errorf("beta lists %+v", list.Jobs)
	}
	if _, err := beta.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "enrichq://jobs/" + st.ID + "/results"}); err == nil ||
		!strings.Contains(strings.ToLower(err.Error()), "not found") {
		t.Errorf("beta reads acme's results resource: %v", err)
	}
	// acme's job is as it was.
	var after status
	s.connect(t, keyAcme).call(t, "job_status", map[string]any{"job_id": st.ID}, &after)
	if after.State != "completed" || *after.Credits.Budget != 50 {
		t.Errorf("acme's job after beta's calls: %+v", after)
	}
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// A stored key's own ceiling (api keys create --mcp-max-budget) is the one
// /mcp enforces, over the operator's default.
func TestStoredKeyCeiling(t *testing.T) {
	t.Parallel()
	api := apitest.Start(t, apitest.Options{Pipeline: jobstest.Options{NoWorker: true}, Stored: true,
		Deps: func(d *httpapi.Deps) { d.MCPMaxBudget = defaultCeiling }})
	_, key := api.CreateKey(t, "gamma", "assistant", nil, new(int64(40)))
	s := (&stack{b: api.Bundle, api: api.API}).connect(t, key)
	list := map[string]any{"rows": companies(1), "roles": []string{"CTO"}}
	if msg := s.refused(t, "submit_job", merge(list, map[string]any{"budget_credits": 41})); !strings.Contains(msg, "ceiling of 40 credits") {
		t.Fatalf("above the stored ceiling: %q", msg)
	}
	var st status
	s.call(t, "submit_job", merge(list, map[string]any{"budget_credits": 40}), &st)
	if st.Credits.Budget == nil || *st.Credits.Budget != 40 {
		t.Fatalf("submitted %+v", st)
	}
}
