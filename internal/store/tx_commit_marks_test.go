package store_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/enrichq/enrichq/dev/chaos/rig"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// cutStores returns a store whose connections pass through an AnswerCutter,
// and one that reaches the same database directly (for the checks).
func cutStores(t *testing.T) (cut *rig.AnswerCutter, st, direct *store.Store) {
	t.Helper()
	dbURL := storetest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Host
	if u.Port() == "" {
		host += ":5432"
	}
	cut, err = rig.NewAnswerCutter("127.0.0.1:0", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cut.Close() })
	u.Host = cut.Addr()
	return cut, storetest.Open(t, u.String()), storetest.Open(t, dbURL)
}

// awaitCut fails the test unless the armed cut was done.
func awaitCut(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the armed cut never happened: the statement was not sent")
	}
}

// A reservation whose connection is cut after it was sent, its answer lost,
// is looked up (committed: its ledger row is the answer) or made again (not
// committed): never held twice, never lost.
func TestReserveWithItsAnswerCut(t *testing.T) {
	t.Parallel()
	for _, delivered := range []bool{true, false} {
		t.Run(fmt.Sprintf("delivered=%v", delivered), func(t *testing.T) {
			t.Parallel()
			cut, st, direct := cutStores(t)
			ctx := context.Background()
			job := createJob(t, st, store.NewJob{BudgetCredits: ptr(int64(100))}, 1)
			key := "cut-reserve-" + job.ID
			done := cut.Arm(key, delivered)
			id, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageEmail, Endpoint: "/v1/email",
				IdempotencyKey: key, Credits: 10, TTL: time.Minute, Account: "acct-cut"})
			awaitCut(t, done)
			if err != nil {
				t.Fatalf("Reserve with its answer cut: %v", err)
			}
			entries, err := direct.LedgerEntries(ctx, job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 || entries[0].ID != id {
				t.Fatalf("ledger %+v, want one reservation, id %d", entries, id)
			}
			j, _ := direct.JobByID(ctx, job.ID)
			u, _ := direct.AccountMonth(ctx, "acct-cut", time.Now())
			if j.CreditsReserved != 10 || u.Reserved != 10 {
				t.Fatalf("held %d on the job and %d on the account, want 10 each", j.CreditsReserved, u.Reserved)
			}
			if st.CutCommits() != 1 {
				t.Fatalf("CutCommits %d, want 1", st.CutCommits())
			}
		})
	}
}

// A chunk's save whose answer is lost is found saved (or saved again):
// never an error that leaves paid answers to be bought again, never an
// attempt counted twice.
func TestSaveOutcomesWithItsAnswerCut(t *testing.T) {
	t.Parallel()
	for _, delivered := range []bool{true, false} {
		t.Run(fmt.Sprintf("delivered=%v", delivered), func(t *testing.T) {
			t.Parallel()
			cut, st, direct := cutStores(t)
			ctx := context.Background()
			job := createJob(t, st, store.NewJob{}, 2)
			claim, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
			if err != nil || len(claim.Rows) != 2 {
				t.Fatalf("claim: %d rows, %v", len(claim.Rows), err)
			}
			now := time.Now()
			key := "cut-save-" + job.ID
			outs := []store.Outcome{
				{RowID: claim.Rows[0].ID, Profile: &store.ProfileResult{ProfileURL: "https://platform.example/in/a", Name: "A"},
					StagesDone: []domain.Stage{domain.StageProfile}, AnyMatch: true, State: domain.RowMatched, Prov: store.Provenance{FetchedAt: now}},
				{RowID: claim.Rows[1].ID, State: domain.RowRetryWait, LastError: "503", NextAttemptAt: now, FailedAttempt: true},
			}
			cache := []store.CacheEntry{{Stage: domain.StageProfile, Key: key, Matched: true, Result: []byte(`{"name":"A"}`), FetchedAt: now}}
			done := cut.Arm(key, delivered)
			ids, err := st.SaveOutcomes(ctx, "acme", claim.Token, outs, cache)
			awaitCut(t, done)
			if err != nil || len(ids) != 2 {
				t.Fatalf("SaveOutcomes with its answer cut: %v, %v", ids, err)
			}
			rows := map[domain.RowState]int{}
			for _, r := range listRows(t, direct, job.ID) {
				rows[r.State]++
				if r.State == domain.RowRetryWait && r.Attempts != 1 {
					t.Errorf("row %d: %d attempts counted, want 1", r.ID, r.Attempts)
				}
			}
			if rows[domain.RowMatched] != 1 || rows[domain.RowRetryWait] != 1 {
				t.Fatalf("rows %v, want one matched and one waiting", rows)
			}
		})
	}
}

// listRows is every row of the job with its attempts.
func listRows(t *testing.T, st *store.Store, jobID string) []store.Row {
	t.Helper()
	var out []store.Row
	rows, err := store.PoolForTest(st).Query(context.Background(), `SELECT id, state, attempts FROM job_rows WHERE job_id = $1 ORDER BY id`, jobID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r store.Row
		if err := rows.Scan(&r.ID, &r.State, &r.Attempts); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// A submitted job whose commit lost its answer is found stored (created), or
// known not stored (ErrUnavailable): never a job stored that the client was
// told failed.
func TestCreateJobWithItsCommitCut(t *testing.T) {
	t.Parallel()
	for _, delivered := range []bool{true, false} {
		t.Run(fmt.Sprintf("delivered=%v", delivered), func(t *testing.T) {
			t.Parallel()
			cut, st, direct := cutStores(t)
			ctx := context.Background()
			name := fmt.Sprintf("cut-submit-%v-%d", delivered, time.Now().UnixNano())
			done := cut.Arm("commit\x00", delivered) // the simple query pgx commits with
			job, created, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Name: name, Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10},
				func(add func(store.NewRow) error) error {
					return add(store.NewRow{InputRow: 1, Ref: "r1", Kind: domain.InputNameCompany, Name: "VP Sales", Company: "Co"})
				})
			awaitCut(t, done)
			jobs, listErr := direct.ListJobs(ctx, "acme", nil, 10)
			if listErr != nil {
				t.Fatal(listErr)
			}
			if delivered {
				if err != nil || !created || len(jobs) != 1 || jobs[0].ID != job.ID {
					t.Fatalf("a committed job with its answer cut: created=%v err=%v; stored %d jobs", created, err, len(jobs))
				}
				return
			}
			if !errors.Is(err, store.ErrUnavailable) || len(jobs) != 0 {
				t.Fatalf("a job whose commit never arrived: err=%v, want ErrUnavailable; stored %d jobs", err, len(jobs))
			}
		})
	}
}

// The other money writes are idempotent: run again after a lost answer, they
// leave what one run leaves. A sent mark answers true, a settlement counts
// its charge once.
func TestIdempotentMoneyWritesWithTheirAnswerCut(t *testing.T) {
	t.Parallel()
	cut, st, direct := cutStores(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 1)
	reserve := func(key string) int64 {
		id, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageEmail, Endpoint: "/v1/email",
			IdempotencyKey: key, Credits: 10, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	warm, id := reserve("warm"), reserve("k")
	if ok, err := st.MarkSent(ctx, warm); !ok || err != nil { // the statement is prepared on the connection now
		t.Fatalf("MarkSent: %v, %v", ok, err)
	}
	done := cut.Arm(string(binary.BigEndian.AppendUint64(nil, uint64(id))), true)
	ok, err := st.MarkSent(ctx, id)
	awaitCut(t, done)
	if !ok || err != nil {
		t.Fatalf("MarkSent with its answer cut: %v, %v", ok, err)
	}
	done = cut.Arm("cut-settle", true)
	err = st.Settle(ctx, id, store.Settlement{Charged: 7, Reported: true, Error: "cut-settle"})
	awaitCut(t, done)
	if err != nil {
		t.Fatalf("Settle with its answer cut: %v", err)
	}
	if err := st.Release(ctx, warm, "not sent"); err != nil {
		t.Fatal(err)
	}
	j, _ := direct.JobByID(ctx, job.ID)
	if j.CreditsSpent != 7 || j.CreditsReserved != 0 {
		t.Fatalf("job spent %d and holds %d, want 7 and 0", j.CreditsSpent, j.CreditsReserved)
	}
}

// Marks older than the age asked are pruned; younger ones stay.
func TestPruneCommitMarks(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 1) // its submit wrote a mark
	if _, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageEmail, Endpoint: "/v1/email",
		IdempotencyKey: "k", Credits: 1, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	pool := store.PoolForTest(st)
	if _, err := pool.Exec(ctx, `UPDATE commit_marks SET made_at = now() - interval '2 days' WHERE ids = '{}'`); err != nil {
		t.Fatal(err)
	}
	n, err := st.PruneCommitMarks(ctx, 24*time.Hour, 100)
	var left int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM commit_marks`).Scan(&left)
	if err != nil || n != 1 || left != 1 {
		t.Fatalf("pruned %d (%v), %d left: want the submit's pruned and the reservation's kept", n, err, left)
	}
}
