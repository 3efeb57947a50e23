package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A replayed answer settles the earlier sends of its Idempotency-Key that
// were counted at their reservation: the oldest at the replayed answer's
// price, the rest at 0; and all at 0 when one of them was already settled.
func TestReconcileReplay(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	reserve := func(job, key string) int64 {
		t.Helper()
		id, err := st.Reserve(ctx, store.Reservation{JobID: job, Stage: domain.StageBulk, Endpoint: "/v1/bulk", IdempotencyKey: key,
			Credits: 100, TTL: time.Minute, Account: "acct-replay"})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	job := createJob(t, st, store.NewJob{}, 1).ID
	lost := reserve(job, "K") // the worker was killed: expired, counted at 100
	reserve(job, "K")         // a second send whose answer was lost too, still reserved
	if err := st.MarkUnknown(ctx, lost, "reservation expired"); err != nil {
		t.Fatal(err)
	}
	other := reserve(job, "other") // another key: left alone
	replay := reserve(job, "K")
	if err := st.Settle(ctx, replay, store.Settlement{Charged: 0, Reported: true}); err != nil {
		t.Fatal(err)
	}
	n, self, err := st.ReconcileReplay(ctx, job, "K", replay, 37, true)
	if err != nil || n != 2 || self {
		t.Fatalf("reconciled %d (self %v, %v), want 2, not self", n, self, err)
	}
	j, err := st.JobByID(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if j.CreditsSpent != 37 || j.CreditsReserved != 100 { // 100: "other", still open
		t.Fatalf("job spent %d reserved %d, want 37 and 100", j.CreditsSpent, j.CreditsReserved)
	}
	if u, _ := st.AccountMonth(ctx, "acct-replay", time.Now()); u.Spent != 37 || u.Reserved != 100 {
		t.Fatalf("account %+v, want spent 37 reserved 100", u)
	}
	if err := st.Release(ctx, other, "test"); err != nil {
		t.Fatal(err)
	}

	// A second job: the first send was answered and settled; an unknown
	// re-send is then counted at 0 by the replay.
	job2 := createJob(t, st, store.NewJob{}, 1).ID
	first := reserve(job2, "K")
	if err := st.Settle(ctx, first, store.Settlement{Charged: 12, Reported: true}); err != nil {
		t.Fatal(err)
	}
	unknown := reserve(job2, "K")
	if err := st.MarkUnknown(ctx, unknown, "timeout"); err != nil {
		t.Fatal(err)
	}
	replay2 := reserve(job2, "K")
	if err := st.Settle(ctx, replay2, store.Settlement{Charged: 0, Reported: true}); err != nil {
		t.Fatal(err)
	}
	if n, self, err := st.ReconcileReplay(ctx, job2, "K", replay2, 12, true); err != nil || n != 1 || self {
		t.Fatalf("reconciled %d (self %v, %v), want 1, not self", n, self, err)
	}
	if j, _ := st.JobByID(ctx, job2); j.CreditsSpent != 12 || j.CreditsReserved != 0 {
		t.Fatalf("job 2 spent %d reserved %d, want 12 and 0", j.CreditsSpent, j.CreditsReserved)
	}

	// A call sent twice by http.Transport and answered as a replay, with no
	// earlier send of its key: its own first send was billed.
	job3 := createJob(t, st, store.NewJob{}, 1).ID
	only := reserve(job3, "K")
	if n, self, err := st.ReconcileReplay(ctx, job3, "K", only, 12, true); err != nil || n != 0 || !self {
		t.Fatalf("reconciled %d (self %v, %v), want 0 and self", n, self, err)
	}
	if _, self, _ := st.ReconcileReplay(ctx, job3, "K", only, 12, false); self {
		t.Fatal("a replay sent once, with no earlier send, charged to itself")
	}
}
