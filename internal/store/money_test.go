package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

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
			id, err := st.Reserve(ctx, store.Reservation{JobID: job, Stage: "email", Endpoint: "/v1/email", IdempotencyKey: "k",
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
	if _, err := st.Reserve(ctx, store.Reservation{JobID: c.ID, Stage: "email", Endpoint: "/v1/email", IdempotencyKey: "k",
		Credits: 10, TTL: time.Minute, Account: "acct1", Allowance: &allowance}); !errors.Is(err, store.ErrBudgetExhausted) {
		t.Fatalf("err = %v", err)
	}
	if u2, _ := st.AccountMonth(ctx, "acct1", time.Now()); u2.Reserved != 0 {
		t.Fatalf("a refused job reservation left %d reserved on the account", u2.Reserved)
	}
}

func TestLookupClaimsAreExclusive(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	keys := []string{"a", "b", "c"}
	won1, err := st.ClaimLookups(ctx, "acme", "profile", keys, "00000000-0000-0000-0000-000000000001", time.Minute)
	if err != nil || len(won1) != 3 {
		t.Fatalf("first claim won %v (%v)", won1, err)
	}
	won2, err := st.ClaimLookups(ctx, "acme", "profile", []string{"c", "d"}, "00000000-0000-0000-0000-000000000002", time.Minute)
	if err != nil || len(won2) != 1 || won2[0] != "d" {
		t.Fatalf("second claim won %v (%v), want only d", won2, err)
	}
	if err := st.ReleaseLookups(ctx, "00000000-0000-0000-0000-000000000001"); err != nil {
		t.Fatal(err)
	}
	won3, err := st.ClaimLookups(ctx, "acme", "profile", []string{"c"}, "00000000-0000-0000-0000-000000000002", time.Minute)
	if err != nil || len(won3) != 1 {
		t.Fatalf("after release: won %v (%v)", won3, err)
	}
	// An expired claim is taken over.
	if _, err := st.ClaimLookups(ctx, "acme", "email", []string{"x"}, "00000000-0000-0000-0000-000000000003", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE lookup_claims SET expires_at = now() - interval '1 second' WHERE input_key = 'x'`); err != nil {
		t.Fatal(err)
	}
	won4, err := st.ClaimLookups(ctx, "acme", "email", []string{"x"}, "00000000-0000-0000-0000-000000000004", time.Minute)
	if err != nil || len(won4) != 1 {
		t.Fatalf("expired claim not taken over: %v (%v)", won4, err)
	}
}
