package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/apitest"
	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The watch and vendor tools' input schemas: what each requires and takes,
// as an assistant reads them; unknown arguments are refused as elsewhere.
func TestWatchToolSchemas(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	a := s.connect(t, keyAcme)
	res, err := a.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ required, props []string }{
		"list_watches":   {nil, []string{"cursor", "limit"}},
		"estimate_watch": {[]string{"job_id"}, []string{"every", "job_id", "lookups", "monthly_cap_credits"}},
		"create_watch":   {[]string{"job_id"}, []string{"every", "job_id", "lookups", "monthly_cap_credits"}},
		"run_watch":      {[]string{"watch_id"}, []string{"max_age", "watch_id"}},
		"watch_changes":  {[]string{"watch_id"}, []string{"cursor", "limit", "watch_id"}},
		"vendor_figures": {nil, nil},
	}
	seen := 0
	for _, tool := range res.Tools {
		w, ok := want[tool.Name]
		if !ok {
			continue
		}
		seen++
		schema, _ := tool.InputSchema.(map[string]any)
		if schema["type"] != "object" {
			t.Errorf("%s: schema type %v", tool.Name, schema["type"])
		}
		var props, req []string
		properties, _ := schema["properties"].(map[string]any)
		for p, v := range properties {
			props = append(props, p)
			if d, _ := v.(map[string]any)["description"].(string); d == "" {
				t.Errorf("%s.%s has no description", tool.Name, p)
			}
		}
		required, _ := schema["required"].([]any)
		for _, r := range required {
			req = append(req, r.(string))
		}
		slices.Sort(props)
		slices.Sort(req)
		if !slices.Equal(props, w.props) || !slices.Equal(req, w.required) {
			t.Errorf("%s: properties %v required %v, want %v and %v", tool.Name, props, req, w.props, w.required)
		}
		if tool.Annotations == nil || tool.Description == "" || tool.Title == "" {
			t.Errorf("%s: no annotations, title or description", tool.Name)
		}
		readOnly := tool.Annotations != nil && tool.Annotations.ReadOnlyHint
		if paid := tool.Name == "create_watch" || tool.Name == "run_watch"; paid == readOnly {
			t.Errorf("%s: read-only %v", tool.Name, readOnly)
		}
	}
	if seen != len(want) {
		t.Fatalf("%d of the %d watch and vendor tools listed", seen, len(want))
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"create_watch", map[string]any{"job_id": "x", "monthly_cap_credits": 10, "period": "30d"}, "invalid_parameter: period: is not a field here"},
		{"create_watch", map[string]any{"monthly_cap_credits": 10}, "invalid_parameter: job_id is required"},
		{"run_watch", map[string]any{}, "invalid_parameter: watch_id is required"},
		{"watch_changes", map[string]any{"watch_id": "w", "limit": 1.5}, "limit: 1.5 is not a whole number"},
		{"vendor_figures", map[string]any{"tenant": "beta"}, "invalid_parameter: tenant: is not a field here"},
	} {
		if msg := a.refused(t, c.tool, c.args); !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: %q, want %q", c.tool, c.args, msg, c.want)
		}
	}
}

// Watches through MCP, within the key's ceilings: estimate_watch prices
// one without making it; create_watch's cap is at most the per-job
// ceiling and counts toward the daily one; run_watch's budget (what is
// left of the month's cap) too; the changes read; another tenant sees
// none of it, and vendor_figures gives each tenant its own month.
func TestWatchesThroughMCP(t *testing.T) {
	t.Parallel()
	st := apitest.Start(t, apitest.Options{Keys: testKeys(), Scheduler: true,
		Service: func(c *service.Config) {
			c.Vendors = config.Vendors{List: []config.VendorSpec{{Name: "vendor", Kind: config.VendorSeed, URL: "https://seed.example", Rate: 10, CreditValue: 1}}}
		},
		Deps: func(d *httpapi.Deps) { d.MCPMaxBudget = defaultCeiling }})
	s := &stack{b: st.Bundle, api: st.API}
	acme := s.connect(t, keyAcme)
	var job status
	acme.call(t, "submit_job", map[string]any{"rows": companies(3), "roles": []string{"CTO"}, "budget_credits": 1000}, &job)
	s.b.WaitJob(t, job.ID, domain.JobCompleted)

	d := s.connect(t, keyDaily) // tenant acme; per job 100, per day 250
	type watchOut struct {
		Watch struct {
			ID    string `json:"id"`
			Month struct {
				Remaining int64 `json:"remaining"`
			} `json:"month"`
		} `json:"watch"`
		Estimate struct {
			Rows  int                      `json:"rows"`
			Month struct{ Min, Max int64 } `json:"month"`
		} `json:"estimate"`
		Rows      int                      `json:"rows"`
		Month     struct{ Min, Max int64 } `json:"month"`
		JobID     *string                  `json:"job_id"`
		Budget    int64                    `json:"budget_credits"`
		MCPBudget struct {
			Committed int64 `json:"committed_today"`
			Left      int64 `json:"left_today"`
		} `json:"mcp_budget"`
		Summary string `json:"summary"`
	}
	var est watchOut
	d.call(t, "estimate_watch", map[string]any{"job_id": job.ID, "monthly_cap_credits": 100}, &est)
	if est.Rows == 0 || est.Month.Max == 0 || est.Month.Max > 100 || est.MCPBudget.Left != dailyCeiling {
		t.Fatalf("estimate_watch: %+v", est)
	}
	var none struct {
		Watches []any `json:"watches"`
	}
	d.call(t, "list_watches", map[string]any{}, &none)
	if len(none.Watches) != 0 {
		t.Fatalf("estimate_watch made a watch: %+v", none)
	}
	if msg := d.refused(t, "create_watch", map[string]any{"job_id": job.ID, "monthly_cap_credits": smallCeiling + 1}); !strings.HasPrefix(msg, "budget_above_ceiling") {
		t.Fatalf("a cap above the per-job ceiling: %q", msg)
	}
	if msg := d.refused(t, "create_watch", map[string]any{"job_id": job.ID}); !strings.HasPrefix(msg, "budget_required") {
		t.Fatalf("no cap: %q", msg)
	}
	if msg := d.refused(t, "create_watch", map[string]any{"job_id": job.ID, "monthly_cap_credits": 50, "every": "1d"}); !strings.Contains(msg, "minimum of 7d") {
		t.Fatalf("every 1d: %q", msg)
	}
	var made watchOut
	d.call(t, "create_watch", map[string]any{"job_id": job.ID, "monthly_cap_credits": 100}, &made)
	if made.Watch.ID == "" || made.Estimate.Month != est.Month || made.MCPBudget.Committed != 100 || made.MCPBudget.Left != dailyCeiling-100 {
		t.Fatalf("create_watch (a refused one commits nothing): %+v, estimated %+v", made, est.Month)
	}

	var run watchOut
	d.call(t, "run_watch", map[string]any{"watch_id": made.Watch.ID, "max_age": "0s"}, &run)
	if run.JobID == nil || run.Budget != 100 || run.MCPBudget.Committed != 200 || run.MCPBudget.Left != 50 {
		t.Fatalf("run_watch: %+v", run)
	}
	s.b.WaitJob(t, *run.JobID, domain.JobCompleted)
	jobs, _ := storetest.JobsAndRows(t, s.b.Store)
	msg := d.refused(t, "run_watch", map[string]any{"watch_id": made.Watch.ID, "max_age": "0s"})
	if !strings.HasPrefix(msg, "budget_above_daily_ceiling") && !strings.HasPrefix(msg, "cap_reached") {
		t.Fatalf("a second run past the day's ceiling: %q", msg)
	}
	if again, _ := storetest.JobsAndRows(t, s.b.Store); again != jobs {
		t.Fatalf("a refused run made a job: %d jobs, were %d", again, jobs)
	}
	var changes struct {
		Changes []any `json:"changes"`
	}
	d.call(t, "watch_changes", map[string]any{"watch_id": made.Watch.ID}, &changes)

	// Tenant beta: no watch, none of acme's by id, its own (empty) month.
	beta := s.connect(t, keyBeta)
	beta.call(t, "list_watches", map[string]any{}, &none)
	if len(none.Watches) != 0 {
		t.Errorf("beta lists acme's watches: %+v", none)
	}
	for _, tool := range []string{"watch_changes", "run_watch"} {
		if msg := beta.refused(t, tool, map[string]any{"watch_id": made.Watch.ID}); msg != "not_found: no such watch" {
			t.Errorf("beta's %s of acme's watch: %q", tool, msg)
		}
	}
	if msg := beta.refused(t, "estimate_watch", map[string]any{"job_id": job.ID, "monthly_cap_credits": 10}); msg != "not_found: no such job" {
		t.Errorf("beta's estimate of acme's job: %q", msg)
	}
	type figures struct {
		Vendors []struct {
			Name  string `json:"name"`
			Month struct {
				Spent int64 `json:"spent"`
				Calls int   `json:"calls"`
			} `json:"month"`
		} `json:"vendors"`
		Summary string `json:"summary"`
	}
	var fa, fb figures
	acme.call(t, "vendor_figures", map[string]any{}, &fa)
	beta.call(t, "vendor_figures", map[string]any{}, &fb)
	var spentA int64
	for _, id := range []string{job.ID, *run.JobID} {
		var st status
		acme.call(t, "job_status", map[string]any{"job_id": id}, &st)
		spentA += st.Credits.Spent
	}
	if len(fa.Vendors) != 1 || fa.Vendors[0].Month.Spent != spentA || fa.Vendors[0].Month.Calls == 0 {
		t.Errorf("acme's vendor_figures: %+v, its jobs spent %d", fa, spentA)
	}
	if len(fb.Vendors) != 1 || fb.Vendors[0].Month.Spent != 0 || fb.Vendors[0].Month.Calls != 0 {
		t.Errorf("beta's vendor_figures show acme's month: %+v", fb)
	}
	t.Logf("vendor_figures: %s", fa.Summary)
	t.Logf("transcript:\n%s", d.transcript.String())
}
