package service_test

import (
	"context"
	"errors"
	"testing"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A watch may ask verify, as a job may: with email, and where a vendor
// verifies; its month's estimate counts the verifications. Verify without
// email, or with no verifier configured, is refused naming lookups.
func TestWatchMayAskVerify(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	seed := config.VendorSpec{Name: "seed", Kind: config.VendorSeed, URL: "http://seed.example", CreditValue: 1}
	checker := config.VendorSpec{Name: "checker", Kind: testVerifierKind, URL: "http://verify.example", CreditValue: 5}
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st},
		Vendors: config.Vendors{List: []config.VendorSpec{seed, checker}}})
	noVerifier := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st},
		Vendors: config.Vendors{List: []config.VendorSpec{seed}}})
	ctx := context.Background()
	job, _, err := svc.Submit(ctx, acme, fourPeople(ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Cancel(ctx, acme, job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishJobs(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	capCredits := int64(100000)
	watch := func(lookups ...domain.Stage) service.NewWatch {
		return service.NewWatch{JobID: job.ID, Every: "30d", MonthlyCapCredits: &capCredits, Lookups: lookups}
	}
	plain, err := svc.EstimateWatch(ctx, acme, watch(domain.StageProfile, domain.StageEmail))
	if err != nil {
		t.Fatal(err)
	}
	verified, err := svc.EstimateWatch(ctx, acme, watch(domain.StageProfile, domain.StageEmail, domain.StageVerify))
	if err != nil {
		t.Fatal(err)
	}
	// One finder of an email: one check a person at most, 5 units each.
	if verified.CreditsPerRun.Max != plain.CreditsPerRun.Max+4*5 || verified.CreditsPerRun.Min != plain.CreditsPerRun.Min {
		t.Errorf("a run with verify %+v, without %+v: want 20 units more at most, nothing more at least", verified.CreditsPerRun, plain.CreditsPerRun)
	}
	for name, c := range map[string]struct {
		svc *service.Service
		nw  service.NewWatch
	}{
		"verify without email": {svc, watch(domain.StageProfile, domain.StageVerify)},
		"no verifier":          {noVerifier, watch(domain.StageEmail, domain.StageVerify)},
		"unknown lookup":       {svc, watch("fax")},
	} {
		var inv *service.InvalidError
		if _, err := c.svc.EstimateWatch(ctx, acme, c.nw); !errors.As(err, &inv) || len(inv.Details) != 1 || inv.Details[0].Column != "lookups" {
			t.Errorf("%s: estimate %v, want invalid lookups", name, err)
		}
		if _, err := c.svc.CreateWatch(ctx, acme, c.nw); !errors.As(err, &inv) {
			t.Errorf("%s: create %v, want invalid lookups", name, err)
		}
	}
	created, err := svc.CreateWatch(ctx, acme, watch(domain.StageEmail, domain.StageVerify))
	if err != nil {
		t.Fatal(err)
	}
	if got := created.Watch.Lookups; len(got) != 2 || got[1] != domain.StageVerify {
		t.Errorf("the watch's lookups %v, want email and verify", got)
	}
}
