package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

func TestReserveNeverExceedsBudget(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{BudgetCredits: ptr[int64](100)}, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var granted []int64
	for range 40 {
		wg.Go(func() {
			id, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageProfile, Endpoint: "/v1/profile", IdempotencyKey: "k", Credits: 7, TTL: time.Minute})
			if err != nil {
				if !errors.Is(err, store.ErrBudgetExhausted) {
					t.Error(err)
				}
				return
			}
			mu.Lock()
			granted = append(granted, id)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(granted) != 14 { // 14*7 = 98 <= 100 < 105
		t.Fatalf("granted %d reservations of 7 in a budget of 100, want 14", len(granted))
	}
	// Settle half at 2, release one, mark one unknown, then settle it (correction).
	for _, id := range granted[:7] {
		if err := st.Settle(ctx, id, store.Settlement{Charged: 2, Reported: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Release(ctx, granted[7], "never sent"); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkUnknown(ctx, granted[8], "timeout"); err != nil {
		t.Fatal(err)
	}
	j, _ := st.JobByID(ctx, job.ID)
	if j.CreditsSpent != 14+7 || j.CreditsReserved != 5*7 {
		t.Fatalf("spent %d reserved %d, want 21 and 35", j.CreditsSpent, j.CreditsReserved)
	}
	if err := st.Settle(ctx, granted[8], store.Settlement{Charged: 1, Reported: true}); err != nil {
		t.Fatal(err)
	}
	j, _ = st.JobByID(ctx, job.ID)
	if j.CreditsSpent != 15 {
		t.Fatalf("after correcting an unknown call: spent %d, want 15", j.CreditsSpent)
	}
	led, err := st.JobLedger(ctx, job.ID)
	if err != nil || led.Charged != j.CreditsSpent || led.Reserved != j.CreditsReserved {
		t.Fatalf("ledger %+v disagrees with job spent %d reserved %d (err %v)", led, j.CreditsSpent, j.CreditsReserved, err)
	}
}

func TestAccountAllowanceHoldsAcrossJobs(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	a := createJob(t, st, store.NewJob{}, 1)
	b := createJob(t, st, store.NewJob{}, 1)
	allowance := int64(50)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var granted []int64
	for i := range 30 {
		job := a.ID
		if i%2 == 1 {
			job = b.ID
		}
		wg.Go(func() {
			id, err := st.Reserve(ctx, store.Reservation{JobID: job, Stage: domain.StageEmail, Endpoint: "/v1/email", IdempotencyKey: "k",
				Credits: 10, TTL: time.Minute, Account: "acct1", Allowance: &allowance})
			var be *store.BudgetError
			if errors.As(err, &be) {
				if be.Scope != "account" {
					t.Errorf("scope %q, want account", be.Scope)
				}
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			granted = append(granted, id)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(granted) != 5 {
		t.Fatalf("%d reservations of 10 granted under an allowance of 50, want 5", len(granted))
	}
	for _, id := range granted {
		if err := st.Settle(ctx, id, store.Settlement{Charged: 5, Reported: true}); err != nil {
			t.Fatal(err)
		}
	}
	u, err := st.AccountMonth(ctx, "acct1", time.Now())
	if err != nil || u.Spent != 25 || u.Reserved != 0 || u.Calls != 5 {
		t.Fatalf("usage = %+v (%v), want 25 spent over 5 calls", u, err)
	}
	// A failed reservation of the job leaves the account untouched.
	small := int64(0)
	c := createJob(t, st, store.NewJob{BudgetCredits: &small}, 1)
	if _, err := st.Reserve(ctx, store.Reservation{JobID: c.ID, Stage: domain.StageEmail, Endpoint: "/v1/email", IdempotencyKey: "k",
		Credits: 10, TTL: time.Minute, Account: "acct1", Allowance: &allowance}); !errors.Is(err, store.ErrBudgetExhausted) {
		t.Fatalf("err = %v", err)
	}
	if u2, _ := st.AccountMonth(ctx, "acct1", time.Now()); u2.Reserved != 0 {
		t.Fatalf("a refused job reservation left %d reserved on the account", u2.Reserved)
	}
}
