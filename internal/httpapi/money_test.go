package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
)

func TestDryRunStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, data := b.submitCSV(t, keyA, "dry_run=true&roles=VP%20Sales,CTO&lookups=profile,email", "ref,company\n1,Acme\n2,Beta\n3,Acme\n")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dry run: %d %s", resp.StatusCode, data)
	}
	est := decode[struct {
		DryRun   bool `json:"dry_run"`
		Rows     int  `json:"rows"`
		Distinct int  `json:"distinct"`
		Credits  struct {
			Min int64 `json:"min"`
			Max int64 `json:"max"`
		} `json:"credits"`
		Seconds float64 `json:"seconds"`
	}](t, data)
	// 3 companies x 2 roles, Acme twice: 4 distinct searches at 2 credits, emails 0..10.
	if !est.DryRun || est.Rows != 6 || est.Distinct != 4 || est.Credits.Min != 8 || est.Credits.Max != 48 || est.Seconds <= 0 {
		t.Fatalf("estimate = %+v", est)
	}
	if j, r := b.counts(t); j != 0 || r != 0 {
		t.Fatalf("a dry run stored %d jobs and %d rows", j, r)
	}
	resp, data = b.submitCSV(t, keyA, "dry_run=maybe", "ref,company\n1,Acme\n")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(data), "dry_run") {
		t.Fatalf("bad dry_run: %d %s", resp.StatusCode, data)
	}
}

func TestPatchBudgetResumesAPausedJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := b.mustCreate(t, keyA, "roles=CTO&budget_credits=10", "ref,company\n1,Acme\n")
	ctx := context.Background()
	if _, err := b.Store.PauseJob(ctx, job.ID, domain.PausedByJobBudget, store.BudgetPausePrefix+": 10 spent"); err != nil {
		t.Fatal(err)
	}
	path := "/v1/jobs/" + job.ID
	for _, bad := range []string{`{"budget_credits": -1}`, `{"name": "x"}`, `[]`, `{"budget_credits": 1.5}`} {
		resp, data := b.call(t, http.MethodPatch, path, keyA, strings.NewReader(bad))
		if resp.StatusCode/100 != 4 {
			t.Errorf("PATCH %s: %d %s, want a 4xx", bad, resp.StatusCode, data)
		}
	}
	if resp, _ := b.call(t, http.MethodPatch, path, keyB, strings.NewReader(`{"budget_credits": 500}`)); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another tenant's PATCH: %d, want 404", resp.StatusCode)
	}
	resp, data := b.call(t, http.MethodPatch, path, keyA, strings.NewReader(`{"budget_credits": 500}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PATCH: %d %s", resp.StatusCode, data)
	}
	st := decode[jobStatus](t, data)
	if st.State != domain.JobQueued {
		t.Fatalf("after raising the budget: state %s, want queued again", st.State)
	}
	j, err := b.Store.GetJob(ctx, tenantA, job.ID)
	if err != nil || j.BudgetCredits == nil || *j.BudgetCredits != 500 {
		t.Fatalf("budget not stored: %+v %v", j.BudgetCredits, err)
	}
}

func TestJobCostsByStage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := b.mustCreate(t, keyA, "roles=CTO&lookups=profile,email", "ref,company\n1,Acme\n")
	ctx := context.Background()
	for stage, charged := range map[domain.Stage]int64{domain.StageProfile: 2, domain.StageEmail: 10} {
		id, err := b.Store.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: stage, Endpoint: "/v1/" + string(stage), IdempotencyKey: string(stage), Credits: 10, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Store.Settle(ctx, id, store.Settlement{Charged: charged, Reported: true}); err != nil {
			t.Fatal(err)
		}
	}
	resp, data := b.call(t, http.MethodGet, "/v1/jobs/"+job.ID+"/costs", keyA, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("costs: %d %s", resp.StatusCode, data)
	}
	c := decode[struct {
		ByStage map[string]service.StageCost `json:"by_stage"`
		Credits struct {
			Spent int64 `json:"spent"`
		} `json:"credits"`
	}](t, data)
	if c.ByStage["profile"].Credits != 2 || c.ByStage["email"].Credits != 10 || c.Credits.Spent != 12 {
		t.Fatalf("costs = %+v", c)
	}
}

// The costs of a job set its ledger beside the vendor's balance readings
// (X-Credits-Remaining): what the readings show billed, and the drift, which
// is shown and never corrected.
func TestJobCostsShowBalanceDrift(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := b.mustCreate(t, keyA, "roles=CTO&lookups=profile,email", "ref,company\n1,Acme\n")
	ctx := context.Background()
	remaining := int64(1000)
	for i, charged := range []int64{2, 10, 5} {
		id, err := b.Store.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageProfile, Endpoint: "/v1/profile",
			IdempotencyKey: fmt.Sprint("k", i), Credits: 10, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		remaining -= charged
		r := remaining
		if err := b.Store.Settle(ctx, id, store.Settlement{Charged: charged, Reported: true, Remaining: &r}); err != nil {
			t.Fatal(err)
		}
	}
	type costs struct {
		Balance store.Drift `json:"balance"`
	}
	get := func() store.Drift {
		resp, data := b.call(t, http.MethodGet, "/v1/jobs/"+job.ID+"/costs", keyA, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("costs: %d %s", resp.StatusCode, data)
		}
		return decode[costs](t, data).Balance
	}
	d := get()
	if d.Readings != 3 || d.BalanceBefore == nil || *d.BalanceBefore != 1000 || d.BalanceAfter == nil || *d.BalanceAfter != 983 ||
		d.VendorBilled != 17 || d.LedgerSpent != 17 || d.Drift != 0 {
		t.Fatalf("balance = %+v, want 3 readings, 1000 -> 983, 17 billed = 17 spent, no drift", d)
	}
	// A call whose answer was lost counts at its worst case (10): the
	// readings do not show it, and the drift says so.
	id, err := b.Store.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageEmail, Endpoint: "/v1/email",
		IdempotencyKey: "lost", Credits: 10, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Store.MarkUnknown(ctx, id, "timeout"); err != nil {
		t.Fatal(err)
	}
	if d := get(); d.VendorBilled != 17 || d.LedgerSpent != 27 || d.Drift != 10 {
		t.Fatalf("balance = %+v, want 17 billed, 27 spent, drift 10", d)
	}
}
