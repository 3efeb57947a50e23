package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The schema refuses a negative charge: a wrapped multiplication or an
// untrue header the code failed to hold is not written, and the job, its
// tenant and the account keep what they had.
func TestSchemaRefusesNegativeCharges(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	job := createJob(t, st, store.NewJob{}, 1)
	id, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageEmail, Endpoint: "/v1/email",
		IdempotencyKey: "k", Credits: 10, TTL: time.Minute, Account: "acct-neg"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Settle(ctx, id, store.Settlement{Charged: -18446744073709551 * 500, Reported: true}); err == nil {
		t.Fatal("a negative charge was settled")
	}
	j, err := st.JobByID(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.CreditsSpent != 0 || j.CreditsReserved != 10 {
		t.Fatalf("after the refused charge: spent %d, reserved %d; want 0 and the reservation's 10", j.CreditsSpent, j.CreditsReserved)
	}
	if err := st.Settle(ctx, id, store.Settlement{Charged: 7, Reported: true}); err != nil {
		t.Fatalf("the true charge: %v", err)
	}
}

// A disputed charge is kept on its ledger line beside the contract's
// price it was settled at.
func TestDisputedChargeOnTheLedger(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 1)
	var ids []int64
	for range 2 {
		id, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageProfile, Endpoint: "/v1/profile",
			IdempotencyKey: "k", Credits: 2, TTL: time.Minute, Vendor: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	claimed := int64(1_000_000_000)
	if err := st.Settle(ctx, ids[0], store.Settlement{Charged: 2, Disputed: &claimed}); err != nil {
		t.Fatal(err)
	}
	if err := st.Settle(ctx, ids[1], store.Settlement{Charged: 2, Reported: true}); err != nil {
		t.Fatal(err)
	}
	got, err := st.JobDisputedCharges(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].LedgerID != ids[0] || got[0].Claimed != claimed || got[0].Charged != 2 || got[0].Vendor != "acme" {
		t.Fatalf("disputed = %+v, want ledger %d claimed %d settled at 2 by acme", got, ids[0], claimed)
	}
}
