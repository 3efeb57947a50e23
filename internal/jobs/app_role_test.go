package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
)

// The whole pipeline runs as the services' role, which owns no table
// (docs/operations.md, "Database roles"): submit, claims, reservations and
// settlements, saves, the explain step, finishing, the feed, an erasure
// with its suppression, and a retention purge.
func TestPipelineAsTheAppRole(t *testing.T) {
	t.Parallel()
	key := []byte("an erasure key of at least thirty-two characters")
	b := jobstest.New(t, jobstest.Options{AppRole: true, Processor: jobs.ProcessorConfig{Bulk: true, ErasureKey: key}})
	b.Submitter.ErasureKey = key
	ctx := context.Background()
	if _, err := b.Store.EnsureTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	opts := ingest.JobOptions{Roles: []string{"VP Sales"}, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}}
	job := b.Submit(t, jobstest.Companies(30), opts)
	job = b.WaitJob(t, job.ID, domain.JobCompleted)
	if spent := b.CheckMoney(t, job.ID); spent == 0 {
		t.Fatal("no credits spent")
	}
	res, err := b.Store.ListResults(ctx, job.ID, domain.RowMatched, 0, 1)
	if err != nil || len(res) != 1 {
		t.Fatalf("a matched row: %v %v", res, err)
	}
	receipt, err := b.Store.Erase(ctx, store.EraseRequest{Tenant: "acme", KeyID: "test", Person: store.Person{ProfileURL: res[0].Profile.ProfileURL},
		Keys: jobs.PersonKeys, Hash: func(s string) []byte { return jobs.KeyedHash(key, s) }})
	if err != nil || receipt.Receipt["job_rows"] == 0 {
		t.Fatalf("erase: %v %v", receipt.Receipt, err)
	}
	again := b.Submit(t, jobstest.Companies(30), opts)
	if counts, err := b.Store.RowCounts(ctx, again.ID); err != nil || counts[domain.RowSkipped] == 0 {
		t.Fatalf("the erased person uploaded again: %v %v", counts, err)
	}
	b.WaitJob(t, again.ID, domain.JobCompleted)
	hour := time.Hour
	if _, err := b.Store.SetRetention(ctx, "acme", "test", &hour); err != nil {
		t.Fatal(err)
	}
	p, err := b.Store.PurgeExpired(ctx, time.Now().Add(2*hour), 1000)
	if err != nil || p.Jobs != 2 {
		t.Fatalf("retention purge: %+v %v", p, err)
	}
}
