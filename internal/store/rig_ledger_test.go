package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The audit reads: a job's calls, the whole ledger summed, the reservations
// still open, and the jobs of an Idempotency-Key.
func TestLedgerAuditReads(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{IdempotencyKey: "submit-1"}, 1)
	other := createJob(t, st, store.NewJob{Tenant: "beta", IdempotencyKey: "submit-1"}, 1)
	reserve := func(jobID, key string, credits int64) int64 {
		t.Helper()
		id, err := st.Reserve(ctx, store.Reservation{JobID: jobID, Stage: domain.StageProfile, Endpoint: "/v1/profile",
			IdempotencyKey: key, Credits: credits, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	settled := reserve(job.ID, "a", 10)
	if err := st.Settle(ctx, settled, store.Settlement{Charged: 4}); err != nil {
		t.Fatal(err)
	}
	unknown := reserve(job.ID, "b", 6)
	if err := st.MarkUnknown(ctx, unknown, "timeout after send"); err != nil {
		t.Fatal(err)
	}
	open := reserve(job.ID, "c", 3)
	reserve(other.ID, "d", 5)

	entries, err := st.LedgerEntries(ctx, job.ID)
	want := []store.LedgerEntry{
		{ID: settled, IdempotencyKey: "a", Status: store.LedgerSettled, Reserved: 10, Charged: 4, Stage: domain.StageProfile},
		{ID: unknown, IdempotencyKey: "b", Status: store.LedgerUnknown, Reserved: 6, Charged: 6, Error: "timeout after send", Stage: domain.StageProfile},
		{ID: open, IdempotencyKey: "c", Status: store.LedgerReserved, Reserved: 3, Stage: domain.StageProfile},
	}
	if err != nil || len(entries) != len(want) {
		t.Fatalf("entries %+v, err %v", entries, err)
	}
	for i := range want {
		if entries[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, entries[i], want[i])
		}
	}

	book, err := st.LedgerBook(ctx)
	if err != nil || book.Charged != 10 || book.Unknown != 6 || book.Reserved != 8 || len(book.Keys) != 4 || !book.Keys["d"] {
		t.Errorf("book %+v, err %v", book, err)
	}
	if n, err := st.OpenReservations(ctx); err != nil || n != 2 {
		t.Errorf("open reservations %d, err %v; want 2", n, err)
	}
	if lapsed := storetest.LapseReservations(t, st); lapsed != 2 {
		t.Errorf("lapsed %d reservations, want 2", lapsed)
	}
	if n, err := st.ExpireReservations(ctx, 10); err != nil || n != 2 {
		t.Errorf("expired %d reservations after they lapsed, err %v; want 2", n, err)
	}

	ids, err := st.JobsWithIdempotencyKey(ctx, "submit-1")
	if err != nil || len(ids) != 2 || ids[0] != job.ID || ids[1] != other.ID {
		t.Errorf("jobs of the key: %v, err %v; want [%s %s]", ids, err, job.ID, other.ID)
	}
}
