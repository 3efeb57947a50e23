package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
)

// Four workers, each with its own limiter on the shared key (as four
// processes), against a vendor allowing 20 requests/s: the vendor answers
// every excess with a 429. Every lookup is served once and paid once; the
// 429 share and the pace are printed (their bound is asserted on a fake
// clock in internal/enrich/ratelimit).
func TestFourWorkersShareTheVendorLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for several seconds at the vendor's pace")
	}
	t.Parallel()
	const rps = 20
	b := jobstest.New(t, jobstest.Options{
		// A burst of 4 (200 ms at 20/s) absorbs sends that a loaded machine
		// delays and then bunches; a limiter running over the rate still
		// meets 429s within the first second.
		Vendor:      func(o *enrichtest.SeedOptions) { o.RPS, o.Burst = rps, 4 },
		Processor:   jobs.ProcessorConfig{Bulk: false, LookupConcurrency: 4},
		Workers:     4,
		Concurrency: 2,
		Rate:        rps,
		Burst:       1,
	})
	b.Submitter.ChunkSize = 10
	const rows = 120
	start := time.Now()
	job := b.Submit(t, jobstest.Companies(rows), ingest.JobOptions{Roles: []string{"VP Sales"}})
	b.WaitJob(t, job.ID, domain.JobCompleted)
	elapsed := time.Since(start)

	st := b.Vendor.Stats()
	calls := st.Requests
	throttled := st.ByStatus[429]
	share := float64(throttled) / float64(calls)
	ideal := time.Duration(float64(rows) / rps * float64(time.Second))
	served := calls - throttled
	t.Logf("4 workers, vendor limit %d req/s: %d calls, %d answered 429 (%.2f%%), %d lookups in %s (ideal %s, %.0f%% of ideal); utilisation %.1f%% of the allowed rate",
		rps, calls, throttled, share*100, served, elapsed.Round(time.Millisecond), ideal, 100*float64(elapsed)/float64(ideal),
		100*float64(served)/elapsed.Seconds()/rps)
	// The vendor's own view: the pace between its first and last answer.
	led := b.Vendor.Ledger()
	if len(led) > 1 {
		span := led[len(led)-1].Time.Sub(led[0].Time)
		t.Logf("vendor side: %d billed calls over %s: %.2f req/s, %.1f%% of the limit",
			len(led), span.Round(time.Millisecond), float64(len(led)-1)/span.Seconds(), 100*float64(len(led)-1)/span.Seconds()/rps)
	}
	if served != rows {
		t.Fatalf("%d lookups served, want %d (one per distinct input)", served, rows)
	}
	// The 429 share is printed, not asserted: on real time it measures the
	// machine's load as much as the limiter. The limiters' share is asserted
	// on a fake clock (internal/enrich/ratelimit's
	// TestFourLimitersShareTheVendorLimit).
	b.CheckMoney(t, job.ID)
}

// Many workers against a budget that covers a third of the rows: the
// vendor never bills more than the budget; the job pauses saying why;
// raising the budget finishes it.
func TestBudgetHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	for _, bulk := range []bool{false, true} {
		t.Run(fmt.Sprintf("bulk=%v", bulk), func(t *testing.T) {
			t.Parallel()
			b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: bulk, BulkSize: 10}, Workers: 4})
			b.Submitter.ChunkSize = 10
			// 90 searches at 2 credits each: 60 credits cover a third.
			budget := int64(60)
			job := b.Submit(t, jobstest.Companies(90), ingest.JobOptions{Roles: []string{"CTO"}, BudgetCredits: &budget})
			paused := b.WaitJob(t, job.ID, domain.JobPaused)
			if !strings.HasPrefix(paused.StateReason, store.BudgetPausePrefix) {
				t.Fatalf("paused with %q, want the budget named", paused.StateReason)
			}
			if billed := b.Vendor.TotalCharged(); billed > budget {
				t.Fatalf("the vendor billed %d, over the budget of %d", billed, budget)
			}
			waitSettled(t, b, job.ID)
			if spent := b.CheckMoney(t, job.ID); spent > budget {
				t.Fatalf("spent %d of %d", spent, budget)
			}

			more := int64(1000)
			if _, err := b.Store.UpdateBudget(context.Background(), "acme", job.ID, &more); err != nil {
				t.Fatal(err)
			}
			done := b.WaitJob(t, job.ID, domain.JobCompleted)
			if done.CreditsSpent != 180 {
				t.Fatalf("spent %d after the raise, want 180 (90 searches at 2)", done.CreditsSpent)
			}
			b.CheckMoney(t, job.ID)
		})
	}
}

// waitSettled waits until no reservation and no claimed row of the job is left.
func waitSettled(t *testing.T, b *jobstest.Bundle, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		j, err := b.Store.JobByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		counts, err := b.Store.RowCounts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.CreditsReserved == 0 && counts[domain.RowInFlight] == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still reserved %d, in flight %d", j.CreditsReserved, counts[domain.RowInFlight])
		}
		<-tick.C
	}
}

// Every input three times in one upload, spread over chunks run by four
// workers at once, then a second job of the same inputs: the vendor bills
// each distinct lookup exactly once.
func TestDuplicatesAreBoughtOnce(t *testing.T) {
	t.Parallel()
	for _, bulk := range []bool{false, true} {
		t.Run(fmt.Sprintf("bulk=%v", bulk), func(t *testing.T) {
			t.Parallel()
			b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: bulk, BulkSize: 10}, Workers: 4})
			b.Submitter.ChunkSize = 10
			base := jobstest.Companies(40)
			var rows []ingest.RowIn
			for range 3 {
				rows = append(rows, base...)
			}
			opts := ingest.JobOptions{Roles: []string{"VP Sales"}, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}}
			first := b.Submit(t, rows, opts)
			b.WaitJob(t, first.ID, domain.JobCompleted)
			second := b.Submit(t, base, opts)
			b.WaitJob(t, second.ID, domain.JobCompleted)

			bought := map[string]int{}
			for _, e := range b.Vendor.Ledger() {
				if e.Status/100 != 2 && e.Status != 404 {
					continue
				}
				for _, in := range e.Inputs {
					bought[e.Endpoint+" "+in]++
				}
			}
			for lookup, n := range bought {
				if n != 1 {
					t.Errorf("%s bought %d times", lookup, n)
				}
			}
			c1, _ := b.Store.RowCounts(context.Background(), first.ID)
			if c1[domain.RowMatched]+c1[domain.RowNoMatch] != 120 {
				t.Fatalf("first job rows %v", c1)
			}
			b.CheckMoney(t, first.ID, second.ID)
		})
	}
}
