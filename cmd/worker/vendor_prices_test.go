package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/upstream"
)

// The vendors file's prices are what the worker reserves before a call, as
// the order and the estimate price by them: a seed searched at 7 credits a
// profile reserves 7 (times its credit value), a PDL-shaped vendor at 4 a
// match reserves 4.
func TestVendorFilePricesReachTheReservations(t *testing.T) {
	t.Parallel()
	seedSrv := httptest.NewServer(enrichtest.NewSeed(enrichtest.DefaultSeedOptions()))
	t.Cleanup(seedSrv.Close)
	pdlSrv := httptest.NewServer(enrichtest.NewPDL(enrichtest.DefaultPDLOptions()))
	t.Cleanup(pdlSrv.Close)
	ropt, err := redis.ParseURL(jobstest.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(ropt)
	t.Cleanup(func() { rdb.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		spec config.VendorSpec
		want int64 // reserved per single profile search, in budget units
	}{
		{config.VendorSpec{Name: "acme", Kind: config.VendorSeed, URL: seedSrv.URL, Key: upstream.Secret(enrichtest.DefaultSeedOptions().APIKeys[0]),
			Rate: 1000, Burst: 100, CreditValue: 2, Prices: map[string]int64{"profile_by_search": 7, "profile_by_url": 3}}, 14},
		{config.VendorSpec{Name: "people", Kind: config.VendorPDL, URL: pdlSrv.URL, Key: "pdl-key", Rate: 1000, Burst: 100, CreditValue: 1,
			Prices: map[string]int64{"match": 4}}, 4},
	} {
		t.Run(string(tc.spec.Kind), func(t *testing.T) {
			t.Parallel()
			b := jobstest.New(t, jobstest.Options{NoWorker: true})
			b.Submitter.Enqueuer = nil
			vcs, err := vendorConfigs(config.Vendors{List: []config.VendorSpec{tc.spec}}, rdb, log)
			if err != nil {
				t.Fatal(err)
			}
			vcs[0].Account = jobstest.RandomName("acct-")
			job := b.Submit(t, []ingest.RowIn{{Ref: "a", Name: "Ann Price", Company: "Acme"}, {Ref: "b", Name: "Bob Price", Company: "Acme"}, {Ref: "c", Name: "Cy Price", Company: "Initech"}}, ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile}})
			proc := jobs.NewProcessor(b.Store, vcs, jobs.ProcessorConfig{}, log)
			for chunk := range job.ChunkCount {
				if _, err := proc.ProcessChunk(context.Background(), store.ChunkRef{JobID: job.ID, Chunk: chunk}); err != nil {
					t.Fatal(err)
				}
			}
			entries, err := b.Store.LedgerEntries(context.Background(), job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) == 0 {
				t.Fatal("no call made")
			}
			for _, e := range entries {
				if e.Reserved != tc.want {
					t.Errorf("call %d (%s) reserved %d, want %d: the vendors file's prices", e.ID, e.IdempotencyKey, e.Reserved, tc.want)
				}
			}
		})
	}
}
