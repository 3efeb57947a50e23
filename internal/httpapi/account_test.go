package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

type accountJSON struct {
	Tenant           string `json:"tenant"`
	DefaultJobBudget *int64 `json:"default_job_budget"`
	MonthlyAllowance *int64 `json:"monthly_allowance"`
	Month            struct {
		Start     string `json:"start"`
		Spent     int64  `json:"spent"`
		Reserved  int64  `json:"reserved"`
		Remaining *int64 `json:"remaining"`
	} `json:"month"`
}

// GET /v1/account shows the tenant's limits (the defaults first) and what
// its jobs spent and hold this month; a job submitted without a budget
// takes the tenant's default; an admin changes the limits.
func TestAccountLimitsAndUsage(t *testing.T) {
	t.Parallel()
	b := setup(t, scopedKeys)
	ctx := context.Background()
	if _, err := b.Store.EnsureTenant(ctx, tenantA); err != nil {
		t.Fatal(err)
	}
	get := func() accountJSON {
		t.Helper()
		resp, data := b.call(t, http.MethodGet, "/v1/account", keyRead, nil)
		if resp.StatusCode != http.StatusOK || strings.Contains(string(data), "whsec_") {
			t.Fatalf("GET /v1/account: %d %s", resp.StatusCode, data)
		}
		return decode[accountJSON](t, data)
	}
	a := get()
	if a.Tenant != tenantA || a.DefaultJobBudget == nil || *a.DefaultJobBudget != store.DefaultJobBudget ||
		a.MonthlyAllowance == nil || *a.MonthlyAllowance != store.DefaultMonthlyAllowance ||
		a.Month.Start != time.Now().UTC().Format("2006-01")+"-01" || a.Month.Remaining == nil || *a.Month.Remaining != store.DefaultMonthlyAllowance {
		t.Fatalf("a new tenant's account: %+v", a)
	}

	job := b.mustCreate(t, keyA, "roles=CTO", "ref,company\n1,Acme\n")
	if job.Credits.Budget == nil || *job.Credits.Budget != store.DefaultJobBudget {
		t.Fatalf("a job without a budget: budget %v, want the tenant's default %d", job.Credits.Budget, store.DefaultJobBudget)
	}
	if own := b.mustCreate(t, keyA, "roles=CTO&budget_credits=7", "ref,company\n1,Acme\n"); own.Credits.Budget == nil || *own.Credits.Budget != 7 {
		t.Fatalf("a job with its own budget: %v", own.Credits.Budget)
	}
	_, err := b.Store.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageProfile, Endpoint: "/v1/profile", IdempotencyKey: "a", Credits: 9, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	paid, err := b.Store.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageProfile, Endpoint: "/v1/profile", IdempotencyKey: "b", Credits: 9, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Store.Settle(ctx, paid, store.Settlement{Charged: 2, Reported: true}); err != nil {
		t.Fatal(err)
	}
	if a := get(); a.Month.Spent != 2 || a.Month.Reserved != 9 || *a.Month.Remaining != store.DefaultMonthlyAllowance-11 {
		t.Fatalf("after a call settled and one in flight: %+v", a.Month)
	}

	for _, bad := range []string{`{"monthly_allowance": -1}`, `{"monthly_allowance": 1.5}`, `{"retention": "1m"}`, `{"retention": 30}`, `{"webhook_secret": "x"}`, `{}`, `[]`} {
		if resp, data := b.call(t, http.MethodPatch, "/v1/account", keyAdmin, strings.NewReader(bad)); resp.StatusCode/100 != 4 {
			t.Errorf("PATCH %s: %d %s, want a 4xx", bad, resp.StatusCode, data)
		}
	}
	resp, data := b.call(t, http.MethodPatch, "/v1/account", keyAdmin, strings.NewReader(`{"default_job_budget": null, "monthly_allowance": 50}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PATCH: %d %s", resp.StatusCode, data)
	}
	if a := decode[accountJSON](t, data); a.DefaultJobBudget != nil || a.MonthlyAllowance == nil || *a.MonthlyAllowance != 50 || *a.Month.Remaining != 39 {
		t.Fatalf("after PATCH: %+v", a)
	}
	if j := b.mustCreate(t, keyA, "roles=CTO", "ref,company\n1,Acme\n"); j.Credits.Budget != nil {
		t.Fatalf("with no default job budget, a job without one: %v", j.Credits.Budget)
	}
	// The allowance now holds the next reservation.
	if _, err := b.Store.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageProfile, Endpoint: "/v1/profile", IdempotencyKey: "c", Credits: 40, TTL: time.Minute}); err == nil {
		t.Fatal("a reservation past the tenant's allowance was granted")
	}
}

// The webhook secret is shown once, by its rotation, and never by GET /v1/account.
func TestRotateWebhookSecretShownOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, scopedKeys)
	ctx := context.Background()
	if _, err := b.Store.EnsureTenant(ctx, tenantA); err != nil {
		t.Fatal(err)
	}
	rotate := func() string {
		t.Helper()
		resp, data := b.call(t, http.MethodPost, "/v1/account/webhook-secret", keyAdmin, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("rotate: %d %s", resp.StatusCode, data)
		}
		return decode[struct {
			Secret string `json:"webhook_secret"`
		}](t, data).Secret
	}
	first, second := rotate(), rotate()
	stored, _ := b.Store.TenantWebhookSecret(ctx, tenantA)
	if first == second || second != stored || !strings.HasPrefix(second, "whsec_") {
		t.Fatalf("rotations %q, %q; stored %q", first, second, stored)
	}
	if _, data := b.call(t, http.MethodGet, "/v1/account", keyA, nil); strings.Contains(string(data), second) {
		t.Fatalf("GET /v1/account shows the secret: %s", data)
	}
}

// POST /v1/jobs/{id}/resume resumes a job paused by the vendor's refusal;
// a budget pause is cured by PATCH, not resume; a running job is not paused.
func TestResumeJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	job := b.mustCreate(t, keyA, "roles=CTO", "ref,company\n1,Acme\n")
	path := "/v1/jobs/" + job.ID + "/resume"
	if resp, data := b.call(t, http.MethodPost, path, keyA, nil); resp.StatusCode != http.StatusConflict || apiErr(t, data).Code != "not_paused" {
		t.Fatalf("resume a queued job: %d %s", resp.StatusCode, data)
	}
	if _, err := b.Store.PauseJob(ctx, job.ID, domain.PausedByVendorAccess, "the vendor refused the API key (401)"); err != nil {
		t.Fatal(err)
	}
	if resp, _ := b.call(t, http.MethodPost, path, keyB, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another tenant's resume: %d", resp.StatusCode)
	}
	resp, data := b.call(t, http.MethodPost, path, keyA, nil)
	if resp.StatusCode != http.StatusOK || decode[jobStatus](t, data).State != domain.JobQueued {
		t.Fatalf("resume a vendor-paused job: %d %s", resp.StatusCode, data)
	}
	if _, err := b.Store.PauseJob(ctx, job.ID, domain.PausedByJobBudget, store.BudgetPausePrefix+": 10 spent"); err != nil {
		t.Fatal(err)
	}
	if resp, data := b.call(t, http.MethodPost, path, keyA, nil); resp.StatusCode != http.StatusConflict || apiErr(t, data).Code != "budget_exhausted" {
		t.Fatalf("resume a budget-paused job: %d %s", resp.StatusCode, data)
	}
}
