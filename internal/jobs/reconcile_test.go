package jobs_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// losingVendor loses the answer of the first send of every Idempotency-Key:
// with billed, the vendor did the work (and billed it) and the answer was
// lost; else the send never reached the vendor. Either way the call's
// outcome is unknown to enrichq, which counts it at its reservation.
type losingVendor struct {
	Vendor
	billed bool
	mu     sync.Mutex
	seen   map[string]bool
}

func (v *losingVendor) first(key string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	f := !v.seen[key]
	v.seen[key] = true
	return f
}

var errLost = &enrich.Error{Class: enrich.ClassTransient, Code: "timeout", Message: "answer lost", OutcomeUnknown: true}

func (v *losingVendor) Bulk(ctx context.Context, rows []enrich.ProfileQuery, include []domain.Stage, key string) (seed.BulkResult, error) {
	if v.first(key) {
		if v.billed {
			_, _ = v.Vendor.Bulk(ctx, rows, include, key)
		}
		return seed.BulkResult{}, errLost
	}
	return v.Vendor.Bulk(ctx, rows, include, key)
}

func (v *losingVendor) Profile(ctx context.Context, q enrich.ProfileQuery, key string) (seed.ProfileResult, error) {
	if v.first(key) {
		if v.billed {
			_, _ = v.Vendor.Profile(ctx, q, key)
		}
		return seed.ProfileResult{}, errLost
	}
	return v.Vendor.Profile(ctx, q, key)
}

// Calls whose outcome was unknown are counted at their reservation until
// the retry of their Idempotency-Key tells: a replay says the lost send was
// billed (priced by the cost table), a fresh answer from a vendor known to
// honour keys that it was not (0). The ledger then equals the vendor's bill
// exactly, whether the vendor marks its replays or not (the contract does
// not name a header: a replay is an answer to a key sent before, charged 0).
func TestUnknownOutcomesAreReconciledByTheRetry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                   string
		billed, bulk, noHeader bool
		honours                domain.HonoursKeys
	}{
		{"billed, bulk", true, true, false, domain.HonoursKeysAuto},
		{"billed, single", true, false, false, domain.HonoursKeysAuto},
		{"billed, bulk, no replay header", true, true, true, domain.HonoursKeysAuto},
		{"billed, single, no replay header", true, false, true, domain.HonoursKeysAuto},
		{"never arrived, bulk", false, true, false, domain.HonoursKeysTrue},
		{"never arrived, single", false, false, false, domain.HonoursKeysTrue},
		{"never arrived, single, no replay header", false, false, true, domain.HonoursKeysTrue},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := jobstest.New(t, jobstest.Options{NoWorker: true, Vendor: func(o *enrichtest.SeedOptions) { o.NoReplayHeader = c.noHeader }})
			b.Submitter.Enqueuer = nil
			job := b.Submit(t, jobstest.Companies(30), ingest.JobOptions{Roles: []string{"CFO"}})
			v := &losingVendor{Vendor: b.Client, billed: c.billed, seen: map[string]bool{}}
			account := "acct-" + job.ID[:8]
			// The clock an hour back: a row's retry is due at once.
			vc := jobstest.SeedVendor(v, noLimit{}, c.honours)
			vc.Account = account
			proc := jobs.NewProcessor(b.Store, []jobs.VendorConfig{vc}, jobs.ProcessorConfig{Bulk: c.bulk,
				Now: func() time.Time { return time.Now().Add(-time.Hour) }}, b.Log)
			ctx := context.Background()
			runRounds(t, b, proc, job.ID, 5)
			if j, _ := b.Store.JobByID(ctx, job.ID); j.State != domain.JobCompleted {
				t.Fatalf("job %s after 5 rounds", j.State)
			}
			led, err := b.Store.JobLedger(ctx, job.ID)
			if err != nil {
				t.Fatal(err)
			}
			unknown := storetest.UnknownCalls(t, b.Store, job.ID)
			t.Logf("%d calls, %d credits charged, vendor billed %d, %d still unknown", led.Calls, led.Charged, b.Vendor.TotalCharged(), unknown)
			if unknown != 0 {
				t.Errorf("%d calls still of unknown outcome", unknown)
			}
			b.CheckMoney(t, job.ID)
			// A replay, header or none, teaches that the vendor honours keys, per vendor key.
			h, known, err := b.Store.HonoursKeys(ctx, account)
			if err != nil {
				t.Fatal(err)
			}
			if c.billed && (!h || !known) {
				t.Errorf("after replays, honours keys = %v (known %v), want learned true", h, known)
			}
			if !c.billed && known {
				t.Errorf("no replay was made, yet honours keys is known (%v)", h)
			}
		})
	}
}

func runRounds(t *testing.T, b *jobstest.Bundle, proc *jobs.Processor, jobID string, rounds int) {
	t.Helper()
	ctx := context.Background()
	j, err := b.Store.JobByID(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	for range rounds {
		for chunk := range j.ChunkCount {
			if _, err := proc.ProcessChunk(ctx, store.ChunkRef{JobID: jobID, Chunk: chunk}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A fresh answer to a retry proves nothing of the earlier sends when the
// vendor is not known to honour keys (none was seen to replay, and the
// setting does not say so): they stay at their worst case, over the bill,
// never under, and the job's status says how many credits are unsettled
// and why.
func TestUnknownVendorKeepsTheWorstCase(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true, Vendor: func(o *enrichtest.SeedOptions) { o.NoReplayHeader = true }})
	b.Submitter.Enqueuer = nil
	job := b.Submit(t, jobstest.Companies(10), ingest.JobOptions{Roles: []string{"CFO"}})
	v := &losingVendor{Vendor: b.Client, billed: false, seen: map[string]bool{}}
	vc := jobstest.SeedVendor(v, noLimit{}, "")
	vc.Account = "acct-" + job.ID[:8]
	proc := jobs.NewProcessor(b.Store, []jobs.VendorConfig{vc}, jobs.ProcessorConfig{
		Now: func() time.Time { return time.Now().Add(-time.Hour) }}, b.Log)
	ctx := context.Background()
	runRounds(t, b, proc, job.ID, 5)
	j, err := b.Store.JobByID(ctx, job.ID)
	if err != nil || j.State != domain.JobCompleted {
		t.Fatalf("job %s, %v", j.State, err)
	}
	worst := enrich.DefaultCosts().Worst(domain.StageProfile)
	billed := b.Vendor.TotalCharged()
	if want := billed + 10*worst; j.CreditsSpent != want {
		t.Errorf("spent %d, want the bill %d plus 10 lost sends at their worst case %d", j.CreditsSpent, billed, want)
	}
	u, err := b.Store.JobUnsettled(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.Calls != 10 || u.Credits != 10*worst || u.RetriedAfresh != 10 || !strings.Contains(u.Reason(), "not known to honour Idempotency-Key") {
		t.Errorf("unsettled = %+v (%s)", u, u.Reason())
	}
}

// A worker lost while holding reservations (killed in flight, or while its
// calls waited for their rate slot) leaves them reserved; the rows come back
// and are retried under the same keys. The explain step closes those
// reservations as the retries settle, before the job may complete: a replay
// prices the billed one, a fresh answer from a vendor known to honour keys
// settles the others at 0. The completed job's credits equal the bill.
func TestExplainClosesALostWorkersReservations(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		billed  bool
		honours domain.HonoursKeys
	}{{"billed before the kill", true, domain.HonoursKeysAuto}, {"waiting for the rate slot", false, domain.HonoursKeysTrue}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := jobstest.New(t, jobstest.Options{NoWorker: true, Vendor: func(o *enrichtest.SeedOptions) { o.NoReplayHeader = true }})
			b.Submitter.Enqueuer = nil
			job := b.Submit(t, jobstest.Companies(8), ingest.JobOptions{Roles: []string{"CFO"}})
			ctx := context.Background()
			// The lost worker: it claimed the rows, reserved a call each (and
			// sent it, when billed), and died; the rows come back.
			claim, err := b.Store.ClaimChunk(ctx, job.ID, 0, time.Minute)
			if err != nil || len(claim.Rows) != 8 {
				t.Fatalf("claim: %d rows, %v", len(claim.Rows), err)
			}
			for _, r := range claim.Rows {
				rowID := r.ID
				key := jobs.IdempotencyKey(job.ID, rowID, domain.StageProfile)
				id, err := b.Store.Reserve(ctx, store.Reservation{JobID: job.ID, RowID: &rowID, Stage: domain.StageProfile, Endpoint: "/v1/profile",
					IdempotencyKey: key, Credits: enrich.DefaultCosts().Worst(domain.StageProfile), TTL: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				if c.billed {
					if ok, err := b.Store.MarkSent(ctx, id); err != nil || !ok {
						t.Fatalf("mark sent: %v, %v", ok, err)
					}
					if _, err := b.Client.Profile(ctx, jobs.ProfileQueryOf(r), key); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := b.Store.ReleaseRows(ctx, claim.Token, claim.IDs()); err != nil {
				t.Fatal(err)
			}
			proc := jobs.NewProcessor(b.Store, []jobs.VendorConfig{jobstest.SeedVendor(b.Client, noLimit{}, c.honours)}, jobs.ProcessorConfig{}, b.Log)
			runRounds(t, b, proc, job.ID, 1)
			j, err := b.Store.JobByID(ctx, job.ID)
			if err != nil || j.State != domain.JobCompleted {
				t.Fatalf("job %s, %v", j.State, err)
			}
			u, err := b.Store.JobUnsettled(ctx, job.ID)
			if err != nil || u.Calls != 0 {
				t.Errorf("unsettled = %+v, %v", u, err)
			}
			b.CheckMoney(t, job.ID)
		})
	}
}

// The finisher does not complete a job while one of its reservations is open
// that a later answer to its key has explained: its credits would not be
// final. A reservation whose call never left is released, and may not be
// sent after.
func TestFinisherWaitsForExplainableReservations(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	job := b.Submit(t, jobstest.Companies(2), ingest.JobOptions{Roles: []string{"CFO"}})
	ctx := context.Background()
	claim, err := b.Store.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(claim.Rows) == 0 {
		t.Fatalf("claim: %v", err)
	}
	r := claim.Rows[0]
	key := jobs.IdempotencyKey(job.ID, r.ID, domain.StageProfile)
	res := store.Reservation{JobID: job.ID, RowID: &r.ID, Stage: domain.StageProfile, Endpoint: "/v1/profile", IdempotencyKey: key, Credits: 2, TTL: time.Hour}
	lost, err := b.Store.Reserve(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Store.MarkSent(ctx, lost); err != nil || !ok { // sent, and its answer lost with its worker
		t.Fatalf("mark sent: %v, %v", ok, err)
	}
	unsent, err := b.Store.Reserve(ctx, res) // another lost worker's, waiting for its rate slot
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Store.ReleaseRows(ctx, claim.Token, claim.IDs()); err != nil {
		t.Fatal(err)
	}
	// Every row is done by another worker; its retry of the key was answered.
	retry, err := b.Store.Reserve(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Store.Settle(ctx, retry, store.Settlement{Charged: 2, Reported: true}); err != nil {
		t.Fatal(err)
	}
	claim, err = b.Store.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var outs []store.Outcome
	for _, r := range claim.Rows {
		outs = append(outs, store.Outcome{RowID: r.ID, State: domain.RowNoMatch, StagesDone: []domain.Stage{domain.StageProfile},
			NoMatches: []domain.Stage{domain.StageProfile}, Prov: store.Provenance{FetchedAt: time.Now()}})
	}
	if _, err := b.Store.SaveOutcomes(ctx, job.Tenant, claim.Token, outs, nil); err != nil {
		t.Fatal(err)
	}
	if done, err := b.Store.FinishJobs(ctx, job.ID); err != nil || len(done) != 0 {
		t.Fatalf("finished %d jobs (%v) with reservation %d open and explained", len(done), err, lost)
	}
	ex, err := b.Store.ExplainJob(ctx, job.ID, func() bool { return true }, nil)
	if err != nil || ex.ByFresh != 1 || ex.Unsent != 1 {
		t.Fatalf("explained %+v, %v; want the sent one settled at 0 by the fresh answer, the unsent one released", ex, err)
	}
	// The unsent reservation is closed: its worker, were it alive, may not send it.
	if ok, err := b.Store.MarkSent(ctx, unsent); err != nil || ok {
		t.Fatalf("mark sent after release: %v, %v; want refused", ok, err)
	}
	if done, err := b.Store.FinishJobs(ctx, job.ID); err != nil || len(done) != 1 || done[0].CreditsSpent != 2 || done[0].CreditsReserved != 0 {
		t.Fatalf("after the explain step: finished %+v, %v", done, err)
	}
}
