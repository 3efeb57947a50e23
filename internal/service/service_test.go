package service_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// Principals of two tenants.
var (
	acme      = service.Principal{Tenant: "acme", KeyID: "k-acme", Scopes: domain.Scopes}
	beta      = service.Principal{Tenant: "beta", KeyID: "k-beta", Scopes: domain.Scopes}
	acmeRead  = service.Principal{Tenant: "acme", KeyID: "k-read", Scopes: []domain.Scope{domain.ScopeRead}}
	acmeSpend = service.Principal{Tenant: "acme", KeyID: "k-submit", Scopes: []domain.Scope{domain.ScopeSubmit}}
	noTenant  = service.Principal{KeyID: "k-none", Scopes: domain.Scopes}
)

// setup returns a service on a fresh database, without a queue (the
// scheduler would hand the chunks out).
func setup(t *testing.T) (*service.Service, *store.Store) {
	t.Helper()
	st := storetest.New(t)
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st}})
	return svc, st
}

// submission is a JSON upload of n companies, with options.
func submission(n int, opts ingest.JobOptions) service.Submission {
	if opts.Lookups == nil {
		opts.Lookups = []domain.Stage{domain.StageProfile}
	}
	return service.Submission{Format: "json", Options: opts, Feed: func(emit func(ingest.Lookup) error) error {
		for i := 1; i <= n; i++ {
			if err := emit(ingest.Lookup{Row: i, Ref: fmt.Sprint("r", i), Kind: domain.InputNameCompany,
				Name: fmt.Sprint("Person ", i), Company: "Acme"}); err != nil {
				return err
			}
		}
		return nil
	}}
}

func mustSubmit(t *testing.T, svc *service.Service, p service.Principal, n int) service.JobStatus {
	t.Helper()
	st, created, err := svc.Submit(context.Background(), p, submission(n, ingest.JobOptions{}))
	if err != nil || !created {
		t.Fatalf("submit: created %v, err %v", created, err)
	}
	return st
}

// A job goes through the service from submit to costs: the tenant's
// principal sees it, lists it page by page, cancels it.
func TestJobThroughTheService(t *testing.T) {
	t.Parallel()
	svc, _ := setup(t)
	ctx := context.Background()

	est, err := svc.Estimate(ctx, acme, submission(3, ingest.JobOptions{}))
	if err != nil || est.Rows != 3 || est.Credits.Max == 0 {
		t.Fatalf("estimate: %+v, %v", est, err)
	}
	sub := submission(3, ingest.JobOptions{Name: "first"})
	sub.Tenant, sub.IdempotencyKey = "beta", "once" // the principal's tenant wins
	first, created, err := svc.Submit(ctx, acme, sub)
	if err != nil || !created || first.Rows.Pending != 3 || first.Rows.Total != 3 || first.State != domain.JobQueued {
		t.Fatalf("submit: %+v, created %v, %v", first, created, err)
	}
	again, created, err := svc.Submit(ctx, acme, sub)
	if err != nil || created || again.ID != first.ID || again.Rows.Total != 3 {
		t.Fatalf("replayed submit: %+v, created %v, %v", again, created, err)
	}
	if _, err := svc.JobStatus(ctx, beta, first.ID); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("the job went to another tenant than the principal's: %v", err)
	}
	second := mustSubmit(t, svc, acme, 1)

	page, err := svc.ListJobs(ctx, acmeRead, "", 1)
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != second.ID || page.NextCursor == nil {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	page, err = svc.ListJobs(ctx, acmeRead, *page.NextCursor, 1)
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != first.ID || page.NextCursor != nil {
		t.Fatalf("second page: %+v, %v", page, err)
	}

	res, err := svc.Results(ctx, acmeRead, first.ID, service.ResultsQuery{Limit: 2})
	if err != nil || len(res.Results) != 2 || res.NextCursor == nil || res.JobID != first.ID {
		t.Fatalf("results page: %+v, %v", res, err)
	}
	res, err = svc.Results(ctx, acmeRead, first.ID, service.ResultsQuery{Limit: 2, Cursor: *res.NextCursor})
	if err != nil || len(res.Results) != 1 || res.Results[0].Ref != "r3" || res.NextCursor != nil {
		t.Fatalf("last results page: %+v, %v", res, err)
	}

	st, err := svc.Cancel(ctx, acmeSpend, first.ID)
	if err != nil || st.State != domain.JobCanceled || st.Rows.Skipped != 3 {
		t.Fatalf("cancel: %+v, %v", st, err)
	}
	budget := int64(7)
	if st, err = svc.SetBudget(ctx, acmeSpend, second.ID, &budget); err != nil || st.Credits.Budget == nil || *st.Credits.Budget != 7 {
		t.Fatalf("budget: %+v, %v", st, err)
	}
	costs, err := svc.Costs(ctx, acmeRead, second.ID)
	if err != nil || costs.JobID != second.ID || costs.ByStage == nil || costs.Credits.Budget == nil || *costs.Credits.Budget != 7 {
		t.Fatalf("costs: %+v, %v", costs, err)
	}
	feed, err := svc.Feed(ctx, acmeRead, 0, 0)
	if err != nil || feed.Results == nil || feed.NextSince != 0 {
		t.Fatalf("feed of a tenant with no results yet: %+v, %v", feed, err)
	}
}

// The service's own refusals: typed errors that say what is wrong.
func TestServiceRefusals(t *testing.T) {
	t.Parallel()
	svc, st := setup(t)
	ctx := context.Background()
	job := mustSubmit(t, svc, acme, 1)
	negative := int64(-1)
	var invalid *service.InvalidError
	for name, err := range map[string]error{
		"a negative budget": func() error { _, err := svc.SetBudget(ctx, acme, job.ID, &negative); return err }(),
		"a bad job cursor":  func() error { _, err := svc.ListJobs(ctx, acme, "nope", 0); return err }(),
		"a bad result cursor": func() error {
			_, err := svc.Results(ctx, acme, job.ID, service.ResultsQuery{Cursor: "nope"})
			return err
		}(),
		"a bad state": func() error {
			_, err := svc.Results(ctx, acme, job.ID, service.ResultsQuery{State: "lost"})
			return err
		}(),
		"a feed position below 0": func() error { _, err := svc.Feed(ctx, acme, -1, 0); return err }(),
		"a control character in the idempotency key": func() error {
			sub := submission(1, ingest.JobOptions{})
			sub.IdempotencyKey = "a\x00b"
			_, _, err := svc.Submit(ctx, acme, sub)
			return err
		}(),
	} {
		if !errors.As(err, &invalid) || invalid.Message == "" {
			t.Errorf("%s: %v, want an *InvalidError", name, err)
		}
	}
	if _, err := svc.Results(ctx, acme, job.ID, service.ResultsQuery{State: "lost"}); !errors.As(err, &invalid) ||
		invalid.Code != service.CodeInvalidParameter || len(invalid.Details) != 1 || invalid.Details[0].Column != "state" {
		t.Errorf("a bad state names the parameter: %+v", invalid)
	}
	if _, err := svc.SetBudget(ctx, acme, job.ID, &negative); !errors.As(err, &invalid) || invalid.Code != service.CodeInvalidOptions {
		t.Errorf("a negative budget is an invalid option: %v", err)
	}

	// A finished job cannot be canceled; a canceled one can, again.
	if _, err := svc.Cancel(ctx, acme, job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Cancel(ctx, acme, job.ID); err != nil {
		t.Errorf("canceling a canceled job again: %v", err)
	}
	done := mustSubmit(t, svc, acme, 1)
	claim, err := st.ClaimChunk(ctx, done.ID, 0, time.Minute)
	if err != nil || len(claim.Rows) != 1 {
		t.Fatalf("claim: %+v, %v", claim, err)
	}
	out := store.Outcome{RowID: claim.Rows[0].ID, State: domain.RowNoMatch, NoMatches: []domain.Stage{domain.StageProfile},
		StagesDone: []domain.Stage{domain.StageProfile}, Prov: store.Provenance{FetchedAt: time.Now()}}
	if _, err := st.SaveOutcomes(ctx, "acme", claim.Token, []store.Outcome{out}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishJobs(ctx, done.ID); err != nil {
		t.Fatal(err)
	}
	var conflict *service.ConflictError
	if _, err := svc.Cancel(ctx, acme, done.ID); !errors.As(err, &conflict) || conflict.Code != "job_finished" ||
		!strings.Contains(conflict.Message, "completed") || !errors.Is(err, service.ErrConflict) {
		t.Errorf("canceling a completed job: %v, want a ConflictError job_finished", err)
	}
}

// Each operation needs its scope: read for what reads, submit for what
// spends or changes a job. The refusal names the scope lacking, and nothing
// is done.
func TestScopes(t *testing.T) {
	t.Parallel()
	svc, st := setup(t)
	ctx := context.Background()
	job := mustSubmit(t, svc, acme, 2)
	budget := int64(1)
	ops := map[string]struct {
		need domain.Scope
		call func(p service.Principal) error
	}{
		"status": {domain.ScopeRead, func(p service.Principal) error { _, err := svc.JobStatus(ctx, p, job.ID); return err }},
		"list":   {domain.ScopeRead, func(p service.Principal) error { _, err := svc.ListJobs(ctx, p, "", 0); return err }},
		"results": {domain.ScopeRead, func(p service.Principal) error {
			_, err := svc.Results(ctx, p, job.ID, service.ResultsQuery{})
			return err
		}},
		"extra keys": {domain.ScopeRead, func(p service.Principal) error { _, err := svc.ResultExtraKeys(ctx, p, job.ID, ""); return err }},
		"feed":       {domain.ScopeRead, func(p service.Principal) error { _, err := svc.Feed(ctx, p, 0, 0); return err }},
		"costs":      {domain.ScopeRead, func(p service.Principal) error { _, err := svc.Costs(ctx, p, job.ID); return err }},
		"estimate": {domain.ScopeSubmit, func(p service.Principal) error {
			_, err := svc.Estimate(ctx, p, submission(1, ingest.JobOptions{}))
			return err
		}},
		"submit": {domain.ScopeSubmit, func(p service.Principal) error {
			_, _, err := svc.Submit(ctx, p, submission(1, ingest.JobOptions{}))
			return err
		}},
		"budget": {domain.ScopeSubmit, func(p service.Principal) error { _, err := svc.SetBudget(ctx, p, job.ID, &budget); return err }},
		"cancel": {domain.ScopeSubmit, func(p service.Principal) error { _, err := svc.Cancel(ctx, p, job.ID); return err }},
	}
	for _, name := range slices.Sorted(maps.Keys(ops)) { // budget before cancel: a canceled job's budget cannot change
		op := ops[name]
		for _, p := range []service.Principal{acmeRead, acmeSpend, {Tenant: "acme", Scopes: []domain.Scope{domain.ScopeAdmin}}} {
			err := op.call(p)
			var fe *service.ForbiddenError
			switch {
			case p.Has(op.need) && err != nil:
				t.Errorf("%s with %v: %v", name, p.Scopes, err)
			case !p.Has(op.need) && (!errors.As(err, &fe) || fe.Need != op.need || !strings.Contains(err.Error(), string(op.need))):
				t.Errorf("%s with %v: %v, want a ForbiddenError naming %q", name, p.Scopes, err, op.need)
			}
		}
	}
	// What the read key was refused left no trace: the submit key made one
	// job more, and the budget and cancel went through only with it.
	j, err := st.GetJob(ctx, "acme", job.ID)
	if err != nil || j.State != domain.JobCanceled || j.BudgetCredits == nil || *j.BudgetCredits != 1 {
		t.Fatalf("job after the submit key's changes: %+v, %v", j, err)
	}
	list, err := svc.ListJobs(ctx, acme, "", 0)
	if err != nil || len(list.Jobs) != 2 {
		t.Fatalf("jobs: %d, %v; want the first and the submit key's", len(list.Jobs), err)
	}
}

// A principal whose tenant is empty sees nothing and makes nothing: the
// store refuses the empty tenant rather than read it as every tenant's.
func TestEmptyTenantSeesNothing(t *testing.T) {
	t.Parallel()
	svc, st := setup(t)
	ctx := context.Background()
	job := mustSubmit(t, svc, acme, 2)
	budget := int64(1)
	for name, err := range map[string]error{
		"status":     func() error { _, err := svc.JobStatus(ctx, noTenant, job.ID); return err }(),
		"list":       func() error { _, err := svc.ListJobs(ctx, noTenant, "", 0); return err }(),
		"results":    func() error { _, err := svc.Results(ctx, noTenant, job.ID, service.ResultsQuery{}); return err }(),
		"extra keys": func() error { _, err := svc.ResultExtraKeys(ctx, noTenant, job.ID, ""); return err }(),
		"feed":       func() error { _, err := svc.Feed(ctx, noTenant, 0, 0); return err }(),
		"costs":      func() error { _, err := svc.Costs(ctx, noTenant, job.ID); return err }(),
		"budget":     func() error { _, err := svc.SetBudget(ctx, noTenant, job.ID, &budget); return err }(),
		"cancel":     func() error { _, err := svc.Cancel(ctx, noTenant, job.ID); return err }(),
		"submit":     func() error { _, _, err := svc.Submit(ctx, noTenant, submission(1, ingest.JobOptions{})); return err }(),
		"estimate (a cached input)": func() error {
			_, err := svc.Estimate(ctx, noTenant, submission(1, ingest.JobOptions{MaxAge: time.Hour}))
			return err
		}(),
	} {
		if !errors.Is(err, service.ErrNoTenant) {
			t.Errorf("%s with an empty tenant: %v, want ErrNoTenant", name, err)
		}
	}
	j, err := st.GetJob(ctx, "acme", job.ID)
	if err != nil || j.State != domain.JobQueued || j.BudgetCredits != nil {
		t.Fatalf("the job changed: %+v, %v", j, err)
	}
	if jobsN, _ := storetest.JobsAndRows(t, st); jobsN != 1 {
		t.Fatalf("%d jobs, want 1", jobsN)
	}
}

// Another tenant's job is not found, whatever the operation.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	svc, _ := setup(t)
	ctx := context.Background()
	job := mustSubmit(t, svc, acme, 1)
	budget := int64(1)
	for name, err := range map[string]error{
		"status":  func() error { _, err := svc.JobStatus(ctx, beta, job.ID); return err }(),
		"results": func() error { _, err := svc.Results(ctx, beta, job.ID, service.ResultsQuery{}); return err }(),
		"costs":   func() error { _, err := svc.Costs(ctx, beta, job.ID); return err }(),
		"budget":  func() error { _, err := svc.SetBudget(ctx, beta, job.ID, &budget); return err }(),
		"cancel":  func() error { _, err := svc.Cancel(ctx, beta, job.ID); return err }(),
	} {
		if !errors.Is(err, service.ErrNotFound) {
			t.Errorf("%s of another tenant's job: %v, want ErrNotFound", name, err)
		}
	}
	if list, err := svc.ListJobs(ctx, beta, "", 0); err != nil || len(list.Jobs) != 0 {
		t.Errorf("beta lists %d jobs, %v", len(list.Jobs), err)
	}
}

// No front door reads a job without its tenant: JobByID is for workers,
// the scheduler and the operator's CLI.
func TestFrontDoorsNeverReadAJobByIDAlone(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{".", "../httpapi"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("no Go files in %s", dir)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), ".JobByID(") {
				t.Errorf("%s calls JobByID: a tenant's request must read its job with GetJob(tenant, id)", f)
			}
		}
	}
}

// A job's vendors option is kept with the job for the worker's waterfall,
// and a name the vendors file does not configure is refused, naming it.
func TestSubmitKeepsTheVendorsOption(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st},
		Vendors: config.Vendors{List: []config.VendorSpec{{Name: "seed"}, {Name: "pdl"}}}})
	ctx := context.Background()
	job, created, err := svc.Submit(ctx, acme, submission(2, ingest.JobOptions{Vendors: []string{"pdl", "seed"}}))
	if err != nil || !created {
		t.Fatalf("submit: created %v, %v", created, err)
	}
	stored, err := st.JobByID(ctx, job.ID)
	if err != nil || !slices.Equal(stored.Vendors, []string{"pdl", "seed"}) {
		t.Fatalf("stored vendors %v, %v", stored.Vendors, err)
	}
	_, _, err = svc.Submit(ctx, acme, submission(2, ingest.JobOptions{Vendors: []string{"pdl", "clearbit"}}))
	var inv *service.InvalidError
	if !errors.As(err, &inv) || !strings.Contains(inv.Message, `"clearbit" is not a configured vendor`) || inv.Details[0].Column != "vendors" {
		t.Fatalf("an unknown vendor: %v", err)
	}
}
