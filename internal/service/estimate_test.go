package service_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A dry run prices the upload without storing it, and sees the cache.
func TestEstimate(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: true}})
	b.Submitter.Bulk, b.Submitter.VendorRPS = true, 10
	rows := jobstest.Companies(30)
	rows = append(rows, rows[:10]...) // duplicates are looked up once
	opts := ingest.JobOptions{Roles: []string{"VP Sales"}, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}, MaxAge: 720 * time.Hour}
	feed := func(emit func(ingest.Lookup) error) error {
		return ingest.ExpandRows(rows, ingest.Options{Roles: opts.Roles}, ingest.DefaultLimits(), emit)
	}
	est, err := b.Submitter.Estimate(context.Background(), service.Submission{Tenant: "acme", Options: opts, Feed: feed})
	if err != nil {
		t.Fatal(err)
	}
	// 30 searches at 2 credits; emails cost 0 to 10 each.
	if est.Rows != 40 || est.Distinct != 30 || est.Cached != 0 || est.Credits.Min != 60 || est.Credits.Max != 60+300 || est.Calls != 1 {
		t.Fatalf("estimate = %+v", est)
	}
	if stored, err := b.Store.ListJobs(context.Background(), "acme", nil, 10); err != nil || len(stored) != 0 {
		t.Fatalf("a dry run stored %d jobs (%v)", len(stored), err)
	}
	// After a real run of the same inputs, the estimate is free.
	job := b.Submit(t, rows, opts)
	b.WaitJob(t, job.ID, domain.JobCompleted)
	est, err = b.Submitter.Estimate(context.Background(), service.Submission{Tenant: "acme", Options: opts, Feed: feed})
	if err != nil {
		t.Fatal(err)
	}
	if est.Cached != 30 || est.Credits.Max != 0 || est.Calls != 0 {
		t.Fatalf("estimate after the run = %+v, want every input cached", est)
	}
	costs, err := b.Store.JobCosts(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, c := range costs {
		total += c.Credits
	}
	j, _ := b.Store.JobByID(context.Background(), job.ID)
	if total != j.CreditsSpent || costs[domain.StageProfile].Credits != 60 {
		t.Fatalf("costs by stage %+v (sum %d), job spent %d", costs, total, j.CreditsSpent)
	}
}

// An estimate prices by what the vendor key's answers showed: once an email
// miss is known to cost 5 and a no-match 1, the least a job can cost counts
// them so, not by the cost table (a miss free, a search 2 either way).
func TestEstimateUsesLearnedPrices(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	ctx := context.Background()
	b.Submitter.Account = fmt.Sprintf("acct-est-%d", time.Now().UnixNano())
	opts := ingest.JobOptions{Roles: []string{"VP Sales"}, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}, MaxAge: 720 * time.Hour}
	rows := jobstest.NamedCompanies("est", 10)
	feed := func(emit func(ingest.Lookup) error) error {
		return ingest.ExpandRows(rows, ingest.Options{Roles: opts.Roles}, ingest.DefaultLimits(), emit)
	}
	est, err := b.Submitter.Estimate(ctx, service.Submission{Tenant: "acme", Options: opts, Feed: feed})
	if err != nil || est.Credits.Min != 10*2 || est.Credits.Max != 10*(2+10) {
		t.Fatalf("by the table: %+v, %v", est.Credits, err)
	}
	for class, p := range map[string]int64{"profile/name_company/no_match": 1, "profile/name_company/match": 2, "email/miss": 5, "email/hit": 10, "email/verified": 10} {
		if _, err := b.Store.LearnPrice(ctx, b.Submitter.Account, class, p, 1); err != nil {
			t.Fatal(err)
		}
	}
	est, err = b.Submitter.Estimate(ctx, service.Submission{Tenant: "acme", Options: opts, Feed: feed})
	if err != nil || est.Credits.Min != 10*(1+5) || est.Credits.Max != 10*(2+10) {
		t.Fatalf("by the learned prices: %+v, %v; want min %d, max %d", est.Credits, err, 10*(1+5), 10*(2+10))
	}
}

// With two vendors the estimate gives the range across the waterfall, in
// budget units: a person at the seed (2 a search, hit or miss) and at pdl
// (1 a match, misses free, worth 3 units): at least 2 (the seed asked
// first, or pdl missing and the seed's search), at most 2 + 3 (both asked,
// each at its worst); a role title only at the seed (pdl does not search
// by role): 2 to 2. A job asking pdl alone: 0 to 3.
func TestEstimateAcrossTheWaterfall(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st},
		Vendors: config.Vendors{List: []config.VendorSpec{
			{Name: "seed", Kind: config.VendorSeed, URL: "http://seed.example", CreditValue: 1},
			{Name: "pdl", Kind: config.VendorPDL, URL: "http://pdl.example", CreditValue: 3},
		}}})
	people := func(opts ingest.JobOptions) service.Submission {
		return service.Submission{Format: "json", Options: opts, Feed: func(emit func(ingest.Lookup) error) error {
			for i := 1; i <= 4; i++ {
				if err := emit(ingest.Lookup{Row: i, Ref: fmt.Sprint("r", i), Kind: domain.InputNameCompany,
					Name: fmt.Sprint("Person ", i), Company: "Acme"}); err != nil {
					return err
				}
			}
			return emit(ingest.Lookup{Row: 5, Ref: "r5", Kind: domain.InputNameCompany, Name: "VP Sales", Role: "VP Sales", Company: "Acme"})
		}}
	}
	profile := []domain.Stage{domain.StageProfile}
	est, err := svc.Estimate(context.Background(), acme, people(ingest.JobOptions{Lookups: profile}))
	if err != nil {
		t.Fatal(err)
	}
	if est.Rows != 5 || est.Credits.Min != 4*2+2 || est.Credits.Max != 4*5+2 {
		t.Fatalf("across the waterfall: %+v, want credits 10 to 22", est)
	}
	est, err = svc.Estimate(context.Background(), acme, people(ingest.JobOptions{Lookups: profile, Vendors: []string{"pdl"}}))
	if err != nil {
		t.Fatal(err)
	}
	if est.Credits.Min != 0 || est.Credits.Max != 4*3 {
		t.Fatalf("pdl alone: %+v, want credits 0 to 12 (the role title is not pdl's)", est)
	}
}

// With one vendor, the estimate prices by the vendors file as the worker
// reserves: its prices and its credit value (a seed searched at 7 credits
// worth 2 units: 14 a person); a PDL-shaped vendor alone by its own price
// list (a match 4, a miss free), not by another kind's.
func TestEstimateOfOneVendorByTheVendorsFile(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	person := func(emit func(ingest.Lookup) error) error {
		return emit(ingest.Lookup{Row: 1, Ref: "r1", Kind: domain.InputNameCompany, Name: "Ann Person", Company: "Acme"})
	}
	for _, tc := range []struct {
		spec     config.VendorSpec
		min, max int64
	}{
		{config.VendorSpec{Name: "seed", Kind: config.VendorSeed, URL: "http://seed.example", Key: "k1", CreditValue: 2,
			Prices: map[string]int64{"profile_by_search": 7}}, 14, 14},
		{config.VendorSpec{Name: "pdl", Kind: config.VendorPDL, URL: "http://pdl.example", Key: "k2", CreditValue: 1,
			Prices: map[string]int64{"match": 4}}, 0, 4},
	} {
		svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st},
			Vendors: config.Vendors{List: []config.VendorSpec{tc.spec}}})
		est, err := svc.Estimate(context.Background(), acme, service.Submission{Format: "json",
			Options: ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile}}, Feed: person})
		if err != nil {
			t.Fatal(err)
		}
		if est.Credits.Min != tc.min || est.Credits.Max != tc.max {
			t.Errorf("%s alone: credits %+v, want %d to %d", tc.spec.Kind, est.Credits, tc.min, tc.max)
		}
	}
}
