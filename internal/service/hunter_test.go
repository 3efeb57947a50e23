package service_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// GET /v1/vendors shows the third vendor with its stages, and the estimate
// prices its emails from a name and a domain, with no profile: a search
// each at most, a miss free.
func TestHunterInVendorsAndEstimate(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st},
		Vendors: config.Vendors{List: []config.VendorSpec{
			{Name: "seed", Kind: config.VendorSeed, URL: "http://seed.example", CreditValue: 1},
			{Name: "finder", Kind: config.VendorHunter, URL: "http://hunter.example", CreditValue: 2, SearchCredits: 3, VerifyCredits: 1},
		}}})
	vs, err := svc.Vendors(context.Background(), acme)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, v := range vs.Vendors {
		if v.Name == "finder" {
			found = true
			if v.Kind != "hunter" || v.CreditValue != 2 || !slices.Contains(v.Stages, domain.StageEmail) || !slices.Contains(v.Stages, domain.StageVerify) {
				t.Errorf("finder: %+v", v)
			}
		}
	}
	if !found {
		t.Fatalf("vendors %+v: no finder", vs.Vendors)
	}
	people := service.Submission{Format: "json", Options: ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail}, Vendors: []string{"finder"}},
		Feed: func(emit func(ingest.Lookup) error) error {
			for i := 1; i <= 4; i++ {
				if err := emit(ingest.Lookup{Row: i, Ref: fmt.Sprint("r", i), Kind: domain.InputNameDomain, Name: fmt.Sprint("Person ", i), Domain: "acme.com"}); err != nil {
					return err
				}
			}
			return nil
		}}
	est, err := svc.Estimate(context.Background(), acme, people)
	if err != nil {
		t.Fatal(err)
	}
	if est.Credits.Min != 0 || est.Credits.Max != 4*3*2 {
		t.Errorf("the finder alone, 4 emails: credits %+v, want 0 to 24 (a search is 3 credits of 2 units)", est.Credits)
	}
}
