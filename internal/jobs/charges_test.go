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

// A vendor (compromised, or someone in the middle) answers some calls with
// a charge header no contract allows: a billion, or a figure that times
// credit_value 2 overflows. Each such call is settled at the contract's
// price and its ledger line marked disputed: the job's spend, the tenant's
// month and the account's month equal what the vendor truly billed (times
// credit_value), the budget holds, and the learned price is the contract's.
func TestAbsurdChargesSettleAtTheContractPrice(t *testing.T) {
	t.Parallel()
	for _, bulk := range []bool{false, true} {
		t.Run(fmt.Sprintf("bulk=%v", bulk), func(t *testing.T) {
			t.Parallel()
			const creditValue = 2
			account := jobstest.RandomName("acct")
			rate := 0.03 // of single calls: about 5 of 160
			if bulk {
				rate = 0.3 // of 16 bulk calls
			}
			b := jobstest.New(t, jobstest.Options{
				Vendor:       func(o *enrichtest.SeedOptions) { o.AbsurdChargeRate = rate },
				VendorConfig: func(v *jobs.VendorConfig) { v.Account, v.CreditValue = account, creditValue },
				Processor:    jobs.ProcessorConfig{Bulk: bulk, BulkSize: 10},
			})
			ctx := context.Background()
			const rows = 160
			job := b.Submit(t, jobstest.Companies(rows), ingest.JobOptions{Roles: []string{"CTO"}})
			done := b.WaitJob(t, job.ID, domain.JobCompleted)
			waitSettled(t, b, job.ID)

			st := b.Vendor.Stats()
			if st.AbsurdCharges == 0 {
				t.Fatal("the fake sent no absurd charge: the test proves nothing")
			}
			billed := b.Vendor.TotalCharged() * creditValue
			if billed != rows*2*creditValue {
				t.Fatalf("the vendor billed %d units, want %d (160 searches at 2 credits, worth 2 each)", billed, rows*2*creditValue)
			}
			done, err := b.Store.JobByID(ctx, done.ID)
			if err != nil {
				t.Fatal(err)
			}
			if done.CreditsSpent != billed {
				t.Errorf("the job spent %d units, the vendor billed %d", done.CreditsSpent, billed)
			}
			month, err := b.Store.TenantMonth(ctx, "acme", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if month.Spent != billed {
				t.Errorf("the tenant's month spent %d units, the vendor billed %d", month.Spent, billed)
			}
			usage, err := b.Store.AccountMonth(ctx, account, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if usage.Spent != billed {
				t.Errorf("the account's month spent %d units, the vendor billed %d", usage.Spent, billed)
			}
			disputed, err := b.Store.JobDisputedCharges(ctx, job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(disputed)) != st.AbsurdCharges {
				t.Fatalf("%d ledger lines disputed, the fake sent %d absurd charges", len(disputed), st.AbsurdCharges)
			}
			for _, d := range disputed {
				if d.Claimed != enrichtest.AbsurdCharges[0] && d.Claimed != enrichtest.AbsurdCharges[1] {
					t.Errorf("ledger %d: claimed %d, want one of %v", d.LedgerID, d.Claimed, enrichtest.AbsurdCharges)
				}
				if d.Charged <= 0 || d.Charged > 10*2*creditValue {
					t.Errorf("ledger %d: settled at %d units, want the contract's price", d.LedgerID, d.Charged)
				}
			}
			prices, err := b.Store.VendorPrices(ctx, account)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range prices {
				if p.Highest > 2 || p.Credits > 2 {
					t.Errorf("learned %s: %d credits, highest %d; want within the contract (a profile search costs at most 2)", p.Class, p.Credits, p.Highest)
				}
			}
		})
	}
}

// The budget holds against absurd charges: a job whose budget covers half
// its rows pauses on it, having spent no more than the budget, every
// disputed call counted at the contract's price.
func TestAbsurdChargesKeepTheBudget(t *testing.T) {
	t.Parallel()
	const creditValue = 2
	b := jobstest.New(t, jobstest.Options{
		Vendor:       func(o *enrichtest.SeedOptions) { o.AbsurdChargeRate = 0.1 },
		VendorConfig: func(v *jobs.VendorConfig) { v.CreditValue = creditValue },
		Processor:    jobs.ProcessorConfig{Bulk: false, LookupConcurrency: 2},
	})
	budget := int64(100 * 2 * creditValue / 2)
	job := b.Submit(t, jobstest.Companies(100), ingest.JobOptions{Roles: []string{"CTO"}, BudgetCredits: &budget})
	paused := b.WaitJob(t, job.ID, domain.JobPaused)
	if !strings.HasPrefix(paused.StateReason, store.BudgetPausePrefix) {
		t.Fatalf("paused with %q, want the budget named", paused.StateReason)
	}
	waitSettled(t, b, job.ID)
	j, err := b.Store.JobByID(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b.Vendor.Stats().AbsurdCharges == 0 {
		t.Fatal("the fake sent no absurd charge: the test proves nothing")
	}
	if billed := b.Vendor.TotalCharged() * creditValue; j.CreditsSpent != billed || j.CreditsSpent > budget || j.CreditsSpent < 0 {
		t.Fatalf("spent %d units of a budget of %d; the vendor billed %d", j.CreditsSpent, budget, billed)
	}
}

// An answer the worker could not read (malformed) that claims an absurd
// charge is not settled at it: it stays unknown at its worst case until its
// retry's replay prices it, so the job's spend ends at what the vendor
// truly billed, the claim kept on the ledger line.
func TestAbsurdChargeOnAnUnreadAnswer(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{
		Vendor: func(o *enrichtest.SeedOptions) {
			o.AbsurdChargeRate, o.MalformedRate = 0.3, 0.3
		},
		Processor: jobs.ProcessorConfig{Bulk: false, LookupConcurrency: 2},
	})
	job := b.Submit(t, jobstest.Companies(60), ingest.JobOptions{Roles: []string{"CTO"}})
	b.WaitJob(t, job.ID, domain.JobCompleted)
	waitSettled(t, b, job.ID)
	st := b.Vendor.Stats()
	if st.AbsurdCharges == 0 || st.Malformed == 0 {
		t.Fatalf("the fake sent %d absurd charges and %d malformed answers: the test proves nothing", st.AbsurdCharges, st.Malformed)
	}
	b.CheckMoney(t, job.ID)
	disputed, err := b.Store.JobDisputedCharges(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(disputed)) != st.AbsurdCharges {
		t.Fatalf("%d ledger lines disputed, the fake sent %d absurd charges", len(disputed), st.AbsurdCharges)
	}
}
