package service_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// testVerifierKind is a vendors-file kind whose adapter is the in-process
// verifier (one credit a verification at worst), for the doors' tests.
const testVerifierKind config.VendorKind = "test_verifier"

func init() {
	enrich.Register(enrich.Kind{Name: testVerifierKind, New: func(s config.VendorSpec, _ enrich.BuildOptions) (enrich.Vendor, error) {
		return enrichtest.NewVerifier(s.Name), nil
	}})
}

func fourPeople(opts ingest.JobOptions) service.Submission {
	return service.Submission{Format: "json", Options: opts, Feed: func(emit func(ingest.Lookup) error) error {
		for i := 1; i <= 4; i++ {
			if err := emit(ingest.Lookup{Row: i, Ref: fmt.Sprint("r", i), Kind: domain.InputNameCompany,
				Name: fmt.Sprint("Person ", i), Company: "Acme"}); err != nil {
				return err
			}
		}
		return nil
	}}
}

// The estimate counts verifications: with verify asked, each person's email
// may be checked once per finder (an invalid address sends the row on to
// the next), each at the verifier's worst in budget units; none at least.
func TestEstimateCountsVerifications(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st},
		Vendors: config.Vendors{List: []config.VendorSpec{
			{Name: "seed", Kind: config.VendorSeed, URL: "http://seed.example", CreditValue: 1},
			{Name: "pdl", Kind: config.VendorPDL, URL: "http://pdl.example", CreditValue: 1},
			{Name: "checker", Kind: testVerifierKind, URL: "http://verify.example", CreditValue: 5},
		}}})
	email := []domain.Stage{domain.StageProfile, domain.StageEmail}
	plain, err := svc.Estimate(context.Background(), acme, fourPeople(ingest.JobOptions{Lookups: email}))
	if err != nil {
		t.Fatal(err)
	}
	verified, err := svc.Estimate(context.Background(), acme, fourPeople(ingest.JobOptions{Lookups: append(email, domain.StageVerify)}))
	if err != nil {
		t.Fatal(err)
	}
	// Two finders of an email (seed, pdl): up to two checks a person, 5 units each.
	if plain.Verifications != 0 || verified.Verifications != 8 {
		t.Fatalf("verifications: %d without verify, %d with, want 0 and 8", plain.Verifications, verified.Verifications)
	}
	if verified.Credits.Max != plain.Credits.Max+8*5 || verified.Credits.Min != plain.Credits.Min || verified.Calls != plain.Calls+8 {
		t.Fatalf("with verify %+v, without %+v: want 40 units and 8 calls more at most, nothing more at least", verified, plain)
	}
	// A job whose own vendors verify nothing is refused.
	_, err = svc.Estimate(context.Background(), acme, fourPeople(ingest.JobOptions{Lookups: append(email, domain.StageVerify), Vendors: []string{"seed"}}))
	var inv *service.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("verify with the seed alone: %v, want invalid_parameter", err)
	}
}

// A job asking verify where no vendor verifies emails is refused before
// anything is stored, with what to do.
func TestSubmitVerifyNeedsAVerifier(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st},
		Vendors: config.Vendors{List: []config.VendorSpec{{Name: "seed", Kind: config.VendorSeed, URL: "http://seed.example", CreditValue: 1}}}})
	_, _, err := svc.Submit(context.Background(), acme, fourPeople(ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail, domain.StageVerify}}))
	var inv *service.InvalidError
	if !errors.As(err, &inv) || len(inv.Details) != 1 || inv.Details[0].Column != "lookups" {
		t.Fatalf("submit with verify and no verifier: %v, want invalid lookups", err)
	}
	if jobs, err := st.ListJobs(context.Background(), "acme", nil, 10); err != nil || len(jobs) != 0 {
		t.Fatalf("%d jobs stored (%v)", len(jobs), err)
	}
}
