package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// ExplainJob closes the open sends of a key that a later answer explains:
// by a replay (the billed one at the replayed answer's price), by a fresh
// answer when the vendor honours keys (at 0), and otherwise counts a
// reservation at its worst case. A key without a later answer stays open,
// and an error answer explains nothing.
func TestExplainJob(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 1)
	reserve := func(key string) int64 {
		t.Helper()
		id, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageEmail, Endpoint: "/v1/email", IdempotencyKey: key,
			Credits: 10, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := st.MarkSent(ctx, id); err != nil || !ok {
			t.Fatalf("mark sent: %v, %v", ok, err)
		}
		return id
	}
	settle := func(id int64, s store.Settlement) {
		t.Helper()
		if err := st.Settle(ctx, id, s); err != nil {
			t.Fatal(err)
		}
	}
	price := int64(5)
	// "replayed": a lost send, then a replay of its answer, priced 5.
	reserve("replayed")
	if sent, err := st.SentBefore(ctx, job.ID, "replayed", 1<<62); err != nil || !sent {
		t.Fatalf("sent before: %v, %v", sent, err)
	}
	settle(reserve("replayed"), store.Settlement{Charged: 0, Reported: true, ReplayPrice: &price})
	// "fresh": a lost send, then a fresh answer, charged 10.
	reserve("fresh")
	settle(reserve("fresh"), store.Settlement{Charged: 10, Reported: true})
	// "busy": a lost send, then an error answer (409), charged 0.
	reserve("busy")
	settle(reserve("busy"), store.Settlement{Charged: 0, Reported: true, Error: "409 idempotency_in_progress"})
	// "alone": a lost send, never sent again.
	reserve("alone")
	if sent, err := st.SentBefore(ctx, job.ID, "never", 1<<62); err != nil || sent {
		t.Fatalf("a key never sent: sent before %v, %v", sent, err)
	}

	ex, err := st.ExplainJob(ctx, job.ID, func() bool { return false }, nil)
	if err != nil || ex.ByReplay != 1 || ex.ByFresh != 0 || ex.Unknown != 1 {
		t.Fatalf("not honouring: explained %+v, %v; want 1 by replay, 1 counted at worst case", ex, err)
	}
	u, err := st.JobUnsettled(ctx, job.ID)
	if err != nil || u.Calls != 3 || u.Held != 2 || u.RetriedAfresh != 1 || u.Credits != 30 {
		t.Fatalf("unsettled = %+v, %v; want busy and alone held, fresh at worst case", u, err)
	}
	ex, err = st.ExplainJob(ctx, job.ID, func() bool { return true }, nil)
	if err != nil || ex.ByReplay != 0 || ex.ByFresh != 1 || ex.Unknown != 0 {
		t.Fatalf("honouring: explained %+v, %v; want the fresh key's send settled at 0", ex, err)
	}
	j, err := st.JobByID(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Spent: the replayed key's lost send at 5, the fresh answer 10; held: busy and alone, 10 each.
	if j.CreditsSpent != 15 || j.CreditsReserved != 20 {
		t.Fatalf("job spent %d, reserved %d; want 15 and 20", j.CreditsSpent, j.CreditsReserved)
	}
}

// A reservation whose call never left (no MarkSent) is released when it
// expires, one that left is counted at its worst case; and a job whose rows
// have all ended does not finish while it holds a never-sent reservation,
// until the explain step releases it.
func TestNeverSentReservations(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 10)
	res := store.Reservation{JobID: job.ID, Stage: domain.StageProfile, Endpoint: "/v1/profile", IdempotencyKey: "k", Credits: 2, TTL: time.Hour}
	unsent, err := st.Reserve(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	saveTenRows(t, st, job)
	if done, err := st.FinishJobs(ctx, job.ID); err != nil || len(done) != 0 {
		t.Fatalf("finished %d jobs (%v) holding a never-sent reservation", len(done), err)
	}
	if ex, err := st.ExplainJob(ctx, job.ID, func() bool { return false }, nil); err != nil || ex.Unsent != 1 {
		t.Fatalf("explained %+v, %v; want the never-sent reservation released", ex, err)
	}
	if ok, err := st.MarkSent(ctx, unsent); err != nil || ok {
		t.Fatalf("mark sent after release: %v, %v", ok, err)
	}
	if done, err := st.FinishJobs(ctx, job.ID); err != nil || len(done) != 1 || done[0].CreditsSpent != 0 || done[0].CreditsReserved != 0 {
		t.Fatalf("finished %+v, %v", done, err)
	}

	// Expiry: the sent one counts at its worst case, the never-sent one is released.
	other := createJob(t, st, store.NewJob{}, 1)
	res.JobID = other.ID
	sent, err := st.Reserve(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.MarkSent(ctx, sent); err != nil || !ok {
		t.Fatalf("mark sent: %v, %v", ok, err)
	}
	if _, err := st.Reserve(ctx, res); err != nil {
		t.Fatal(err)
	}
	if n := storetest.LapseReservations(t, st); n != 2 {
		t.Fatalf("lapsed %d reservations, want 2", n)
	}
	if n, err := st.ExpireReservations(ctx, 10); err != nil || n != 2 {
		t.Fatalf("expired %d, %v", n, err)
	}
	j, err := st.JobByID(ctx, other.ID)
	if err != nil || j.CreditsSpent != 2 || j.CreditsReserved != 0 {
		t.Fatalf("after expiry: spent %d, reserved %d (%v); want the sent call's 2 spent, the other released", j.CreditsSpent, j.CreditsReserved, err)
	}
}
