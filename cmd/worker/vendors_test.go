package main

import (
	"io"
	"log/slog"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/enrich/pdl"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
)

// The worker builds every vendor of the file, in its order, each behind its
// adapter under its name, with its account, credit value and bulk setting.
func TestVendorConfigs(t *testing.T) {
	t.Parallel()
	ropt, err := redis.ParseURL(jobstest.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(ropt)
	defer rdb.Close()
	vs := config.Vendors{List: []config.VendorSpec{
		{Name: "acme", Kind: config.VendorSeed, URL: "http://127.0.0.1:9", Key: "seed-key", Rate: 5, CreditValue: 1, Bulk: true},
		{Name: "people", Kind: config.VendorPDL, URL: "http://127.0.0.1:9", Key: "pdl-key", Rate: 2, CreditValue: 3, MonthlyCredits: 100},
	}}
	got, err := vendorConfigs(vs, rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d vendors", len(got))
	}
	if s, ok := got[0].Vendor.(*seed.Vendor); !ok || s.Name() != "acme" || s.Book() == nil || got[0].NoBulk || got[0].Account != vs.List[0].Account() {
		t.Errorf("the seed vendor: %+v", got[0])
	}
	if p, ok := got[1].Vendor.(*pdl.Vendor); !ok || p.Name() != "people" || got[1].CreditValue != 3 || !got[1].NoBulk ||
		got[1].Allowance == nil || *got[1].Allowance != 100 || got[1].Account == got[0].Account {
		t.Errorf("the pdl vendor: %+v", got[1])
	}
}
