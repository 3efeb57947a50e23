package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

func TestPipelineBulkEndToEnd(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: true}})
	job := b.Submit(t, jobstest.Companies(90), ingest.JobOptions{Roles: []string{"VP Sales"}, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}})
	job = b.WaitJob(t, job.ID, domain.JobCompleted)
	counts, err := b.Store.RowCounts(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if counts[domain.RowMatched]+counts[domain.RowNoMatch] != 90 {
		t.Fatalf("rows = %v, want 90 matched or no_match", counts)
	}
	if counts[domain.RowMatched] == 0 || counts[domain.RowNoMatch] == 0 {
		t.Fatalf("rows = %v: the fake's hit rate should give both outcomes", counts)
	}
	if spent := b.CheckMoney(t, job.ID); spent == 0 {
		t.Fatal("no credits spent")
	}
	// Every matched row has its profile; every no-match has a marker.
	res, err := b.Store.ListResults(context.Background(), job.ID, "", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		switch r.State {
		case domain.RowMatched:
			if r.Profile == nil || r.Profile.ProfileURL == "" || r.Profile.Role == "" {
				t.Fatalf("matched row without a profile: %+v", r)
			}
		case domain.RowNoMatch:
			if len(r.NoMatches) == 0 || r.NoMatches[0] != domain.StageProfile {
				t.Fatalf("no_match row without a marker: %+v", r)
			}
		}
	}
	if st := b.Vendor.Stats(); st.ByEndpoint["bulk"] == 0 {
		t.Fatalf("no bulk call made: %+v", st)
	}
}

func TestPipelineSingleLookupsWithFaults(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{
		Vendor:    func(o *enrichtest.SeedOptions) { o.FailRate = 0.2; o.MalformedRate = 0.05 },
		Processor: jobs.ProcessorConfig{Bulk: false, MaxAttempts: 20},
	})
	job := b.Submit(t, jobstest.Companies(40), ingest.JobOptions{Roles: []string{"Head of Marketing"}, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail, domain.StagePhone}})
	job = b.WaitJob(t, job.ID, domain.JobCompleted)
	counts, _ := b.Store.RowCounts(context.Background(), job.ID)
	if counts[domain.RowMatched]+counts[domain.RowNoMatch]+counts[domain.RowFailed] != 40 {
		t.Fatalf("rows = %v", counts)
	}
	if counts[domain.RowFailed] > 0 {
		t.Fatalf("rows failed despite 20 attempts against 20%% faults: %v", counts)
	}
	// Malformed 200 answers were billed by the Vendor: enrichq counts them as spent (unknown outcome),
	// so its account may exceed the vendor's by those, never fall short.
	ctx := context.Background()
	j, _ := b.Store.JobByID(ctx, job.ID)
	if billed := b.Vendor.TotalCharged(); j.CreditsSpent < billed {
		t.Fatalf("enrichq accounted %d credits, less than the %d the vendor billed", j.CreditsSpent, billed)
	}
}

func TestPipelineBudgetStopsSpending(t *testing.T) {
	t.Parallel()
	for _, bulk := range []bool{true, false} {
		t.Run(fmt.Sprintf("bulk=%v", bulk), func(t *testing.T) {
			t.Parallel()
			b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: bulk}, Workers: 2})
			// 60 searches cost 2 credits each: a budget of 60 covers half.
			budget := int64(60)
			job := b.Submit(t, jobstest.Companies(60), ingest.JobOptions{Roles: []string{"CTO"}, BudgetCredits: &budget})
			job = b.WaitJob(t, job.ID, domain.JobPaused)
			if !strings.Contains(job.StateReason, "budget") {
				t.Fatalf("paused with reason %q, want one naming the budget", job.StateReason)
			}
			if billed := b.Vendor.TotalCharged(); billed > budget {
				t.Fatalf("the vendor billed %d credits, over the budget of %d", billed, budget)
			}
			// Let in-flight work settle, then check the books.
			deadline := time.Now().Add(30 * time.Second)
			for {
				j, _ := b.Store.JobByID(context.Background(), job.ID)
				counts, _ := b.Store.RowCounts(context.Background(), job.ID)
				if j.CreditsReserved == 0 && counts[domain.RowInFlight] == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("reservations not settled: %+v %v", j, counts)
				}
				time.Sleep(10 * time.Millisecond)
			}
			spent := b.CheckMoney(t, job.ID)
			if spent > budget || spent < budget/2 {
				t.Fatalf("spent %d of a budget of %d", spent, budget)
			}
			counts, _ := b.Store.RowCounts(context.Background(), job.ID)
			if counts[domain.RowPending] == 0 {
				t.Fatalf("rows = %v: rows beyond the budget should wait, pending", counts)
			}
		})
	}
}

func TestPipelineCacheNeverPaysTwice(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: true}})
	rows := jobstest.Companies(30)
	first := b.Submit(t, rows, ingest.JobOptions{Roles: []string{"VP Sales"}, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}})
	b.WaitJob(t, first.ID, domain.JobCompleted)
	billed := b.Vendor.TotalCharged()
	rawEntries, entries := storetest.MatchedCacheForms(t, b.Store)
	if entries == 0 || rawEntries != entries {
		t.Fatalf("%d of %d matched cache entries in the raw form", rawEntries, entries)
	}
	second := b.Submit(t, rows, ingest.JobOptions{Roles: []string{"VP Sales"}, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}})
	second = b.WaitJob(t, second.ID, domain.JobCompleted)
	if again := b.Vendor.TotalCharged(); again != billed {
		t.Fatalf("the second job of the same inputs was billed %d more credits", again-billed)
	}
	if second.CreditsSpent != 0 {
		t.Fatalf("second job spent %d credits", second.CreditsSpent)
	}
	// The second job's results, every one from the cache, are the first's,
	// the vendor's raw records included.
	a, c := storetest.ResultsDigest(t, b.Store, first.ID), storetest.ResultsDigest(t, b.Store, second.ID)
	if strings.Replace(a, "| false", "| true", -1) != c || strings.Count(c, "| true") == 0 {
		t.Fatalf("the second job's results are not the first's from the cache:\nfirst:\n%s\nsecond:\n%s", a, c)
	}
}

// A cached answer that cannot be read is not an answer: its input is
// claimed and bought again, and the rest of the job comes from the cache.
func TestPipelineUnreadableCacheEntryIsBoughtAgain(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: true}})
	rows := jobstest.Companies(20)
	first := b.Submit(t, rows, ingest.JobOptions{Roles: []string{"VP Sales"}, Lookups: []domain.Stage{domain.StageProfile}})
	b.WaitJob(t, first.ID, domain.JobCompleted)
	billed := b.Vendor.TotalCharged()
	key := storetest.SpoilCachedAnswer(t, b.Store, domain.StageProfile)
	second := b.Submit(t, rows, ingest.JobOptions{Roles: []string{"VP Sales"}, Lookups: []domain.Stage{domain.StageProfile}})
	second = b.WaitJob(t, second.ID, domain.JobCompleted)
	if second.CreditsSpent == 0 || b.Vendor.TotalCharged()-billed != second.CreditsSpent {
		t.Fatalf("second job spent %d credits, the vendor billed %d more: want the one unreadable input bought again",
			second.CreditsSpent, b.Vendor.TotalCharged()-billed)
	}
	fromCache, bought := storetest.ProfileSources(t, b.Store, second.ID)
	if bought != 1 || fromCache == 0 {
		t.Fatalf("second job: %d profiles bought, %d from the cache; want 1 bought (%s) and the others from the cache", bought, fromCache, key)
	}
}

func TestPipelinePoisonRowFailsAlone(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{
		Vendor:    func(o *enrichtest.SeedOptions) { o.RejectSubstring = "poison" },
		Processor: jobs.ProcessorConfig{Bulk: true},
	})
	rows := jobstest.Companies(10)
	rows[3].Company = "poison pill AG"
	job := b.Submit(t, rows, ingest.JobOptions{Roles: []string{"CEO"}})
	b.WaitJob(t, job.ID, domain.JobCompleted)
	res, err := b.Store.ListResults(context.Background(), job.ID, domain.RowFailed, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Ref != "crm-0003" || !strings.Contains(res[0].StateReason, "vendor rejected") {
		t.Fatalf("failed rows = %+v, want only crm-0003 rejected by the vendor", res)
	}
	if res[0].Attempts != 0 {
		t.Fatalf("a rejected input was retried %d times", res[0].Attempts)
	}
	b.CheckMoney(t, job.ID)
}

func TestLostWorkIsFoundInPostgres(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: true}})
	// Submit without enqueueing, as if Redis lost every task.
	b.Submitter.Enqueuer = nil
	job := b.Submit(t, jobstest.Companies(50), ingest.JobOptions{Roles: []string{"CFO"}})
	b.WaitJob(t, job.ID, domain.JobCompleted)
	b.CheckMoney(t, job.ID)
}

func TestDuplicateTaskDoesNothing(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true, Processor: jobs.ProcessorConfig{Bulk: true}})
	b.Submitter.Enqueuer = nil
	job := b.Submit(t, jobstest.Companies(10), ingest.JobOptions{Roles: []string{"CFO"}})
	proc := jobs.NewProcessor(b.Store, []jobs.VendorConfig{jobstest.SeedVendor(b.Client, noLimit{}, "")}, jobs.ProcessorConfig{Bulk: true}, b.Log)
	ctx := context.Background()
	ref := store.ChunkRef{JobID: job.ID, Chunk: 0}
	if _, err := proc.ProcessChunk(ctx, ref); err != nil {
		t.Fatal(err)
	}
	calls := b.Vendor.Stats().Requests
	if _, err := proc.ProcessChunk(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if again := b.Vendor.Stats().Requests; again != calls {
		t.Fatalf("a duplicate task made %d more vendor calls", again-calls)
	}
	j, _ := b.Store.JobByID(ctx, job.ID)
	if j.State != domain.JobCompleted {
		t.Fatalf("job %s, want completed", j.State)
	}
}

type noLimit struct{}

func (noLimit) Wait(context.Context) error                     { return nil }
func (noLimit) Throttled(context.Context, time.Duration) error { return nil }
func (noLimit) Succeeded(context.Context)                      {}

// Vendor is the seed vendor's calls, as a test wraps them.
type Vendor = seed.API
