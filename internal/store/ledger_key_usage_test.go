package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A key is read only while none of its reservations is open; a reading
// returns the balance's fall since the previous one and the key's calls
// between them, a lost call with the price its later answered send
// proposes; a lost call settled by the reading is marked witnessed.
func TestReadKeyUsageBetweenQuietReadings(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 1).ID
	const acct = "acct-key-usage"
	reserve := func(key string) int64 {
		t.Helper()
		id, err := st.Reserve(ctx, store.Reservation{JobID: job, Stage: domain.StageEmail, Endpoint: "/v2/email-finder",
			IdempotencyKey: key, Credits: 1, TTL: time.Minute, Account: acct, Vendor: "finder"})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	balance := int64(100)
	read := func(context.Context) (int64, error) { return balance, nil }

	if _, err := st.ReadKeyUsage(ctx, "", read); err == nil {
		t.Error("a reading without an account: want an error")
	}
	ku, err := st.ReadKeyUsage(ctx, acct, read)
	if err != nil || !ku.Quiet || !ku.First {
		t.Fatalf("first reading %+v (%v), want quiet and first", ku, err)
	}

	lostFound, lostMiss, open := reserve("found"), reserve("miss"), reserve("other")
	for _, id := range []int64{lostFound, lostMiss} {
		if err := st.MarkUnknown(ctx, id, "worker lost"); err != nil {
			t.Fatal(err)
		}
	}
	if ku, err := st.ReadKeyUsage(ctx, acct, func(context.Context) (int64, error) {
		t.Error("the balance read while a reservation is open")
		return 0, nil
	}); err != nil || ku.Quiet {
		t.Fatalf("reading with a reservation open: %+v (%v), want not quiet", ku, err)
	}
	if err := st.Settle(ctx, open, store.Settlement{Charged: 1}); err != nil {
		t.Fatal(err)
	}
	retryFound, retryMiss := reserve("found"), reserve("miss")
	if err := st.Settle(ctx, retryFound, store.Settlement{Charged: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.Settle(ctx, retryMiss, store.Settlement{Charged: 0}); err != nil {
		t.Fatal(err)
	}

	balance = 97 // other, the lost found and its retry
	ku, err = st.ReadKeyUsage(ctx, acct, read)
	if err != nil || !ku.Quiet || ku.First || ku.Fall != 3 || len(ku.Calls) != 5 {
		t.Fatalf("second reading %+v (%v), want a fall of 3 over 5 calls", ku, err)
	}
	want := map[int64]int64{lostFound: 1, lostMiss: 0}
	for _, c := range ku.Calls {
		p, lost := want[c.ID]
		switch {
		case c.Unknown != lost:
			t.Errorf("call %d unknown=%v, want %v", c.ID, c.Unknown, lost)
		case lost && (c.Proposed == nil || *c.Proposed != p || c.Charged != 1):
			t.Errorf("lost call %d: charged %d, proposed %v, want 1 and %d", c.ID, c.Charged, c.Proposed, p)
		case !lost && c.Proposed != nil:
			t.Errorf("answered call %d proposed %d, want none", c.ID, *c.Proposed)
		}
	}

	if err := st.SettleUnknownByUsage(ctx, lostMiss, 0, "settled by the key's readings"); err != nil {
		t.Fatal(err)
	}
	if err := st.SettleUnknownByUsage(ctx, retryFound, 0, "a settled call is left alone"); err != nil {
		t.Fatal(err)
	}
	entries, err := st.LedgerEntries(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.ID == lostMiss && (e.Status != store.LedgerSettled || e.Charged != 0 || e.Error != "settled by the key's readings") {
			t.Errorf("lost miss after its settlement: %+v", e)
		}
		if e.ID == retryFound && (e.Charged != 1 || e.Error != "") {
			t.Errorf("an answered call changed by SettleUnknownByUsage: %+v", e)
		}
	}
	if j, _ := st.JobByID(ctx, job); j.CreditsSpent != 3 {
		t.Errorf("job spent %d, want 3 (the lost found still at its worst)", j.CreditsSpent)
	}

	// The next reading starts after the last: no call twice.
	ku, err = st.ReadKeyUsage(ctx, acct, read)
	if err != nil || !ku.Quiet || ku.Fall != 0 || len(ku.Calls) != 0 {
		t.Fatalf("third reading %+v (%v), want nothing new", ku, err)
	}
	// A failed read keeps no reading.
	boom := errors.New("vendor down")
	if _, err := st.ReadKeyUsage(ctx, acct, func(context.Context) (int64, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Errorf("a failed read: %v, want it returned", err)
	}
	balance = 90
	if ku, err := st.ReadKeyUsage(ctx, acct, read); err != nil || ku.Fall != 7 {
		t.Errorf("reading after a failed one: %+v (%v), want a fall of 7 from the last kept", ku, err)
	}
}
