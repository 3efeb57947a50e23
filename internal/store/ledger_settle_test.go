package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// Reservations and settlements of two jobs on one account, interleaved by
// many goroutines: they lock the job's row and the account's in one order,
// so Postgres never has a deadlock to break, and every credit adds up.
func TestReserveAndSettleNeverDeadlock(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	jobs := []string{createJob(t, st, store.NewJob{}, 1).ID, createJob(t, st, store.NewJob{}, 1).ID}
	const workers, calls = 12, 30
	var wg sync.WaitGroup
	var mu sync.Mutex
	spent := map[string]int64{}
	for w := range workers {
		wg.Go(func() {
			job := jobs[w%2]
			for i := range calls {
				id, err := st.Reserve(ctx, store.Reservation{JobID: job, Stage: domain.StageEmail, Endpoint: "/v1/email",
					IdempotencyKey: "k", Credits: 10, TTL: time.Minute, Account: "acct-deadlock"})
				if err != nil {
					t.Error(err)
					return
				}
				var charged int64
				switch i % 3 {
				case 0:
					charged = 7
					err = st.Settle(ctx, id, store.Settlement{Charged: charged, Reported: true})
				case 1:
					err = st.Release(ctx, id, "never sent")
				default: // unknown first (counted at 10), then the vendor's answer corrects it
					if err = st.MarkUnknown(ctx, id, "timeout"); err == nil {
						charged = 5
						err = st.Settle(ctx, id, store.Settlement{Charged: charged, Reported: true})
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				spent[job] += charged
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if n := st.Conflicts(); n != 0 {
		t.Errorf("Postgres broke %d deadlocks or serialization conflicts; want none (one lock order)", n)
	}
	var total int64
	for _, id := range jobs {
		j, err := st.JobByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.CreditsSpent != spent[id] || j.CreditsReserved != 0 {
			t.Errorf("job %s: spent %d reserved %d, want spent %d reserved 0", id, j.CreditsSpent, j.CreditsReserved, spent[id])
		}
		total += spent[id]
	}
	u, err := st.AccountMonth(ctx, "acct-deadlock", time.Now())
	if err != nil || u.Spent != total || u.Reserved != 0 {
		t.Fatalf("account usage %+v (%v), want spent %d reserved 0", u, err, total)
	}
}
