package jobs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
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
	jobs.Vendor
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

func (v *losingVendor) Bulk(ctx context.Context, rows []enrich.ProfileQuery, include []domain.Stage, key string) (enrich.BulkResult, error) {
	if v.first(key) {
		if v.billed {
			_, _ = v.Vendor.Bulk(ctx, rows, include, key)
		}
		return enrich.BulkResult{}, errLost
	}
	return v.Vendor.Bulk(ctx, rows, include, key)
}

func (v *losingVendor) Profile(ctx context.Context, q enrich.ProfileQuery, key string) (enrich.ProfileResult, error) {
	if v.first(key) {
		if v.billed {
			_, _ = v.Vendor.Profile(ctx, q, key)
		}
		return enrich.ProfileResult{}, errLost
	}
	return v.Vendor.Profile(ctx, q, key)
}

// Calls whose outcome was unknown are counted at their reservation until
// the retry of their Idempotency-Key tells: a replay says the lost send was
// billed (priced by the cost table), a fresh answer that it was not (0).
// The ledger then equals the vendor's bill exactly.
func TestUnknownOutcomesAreReconciledByTheRetry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		billed, bulk bool
	}{
		{"billed, bulk", true, true}, {"billed, single", true, false},
		{"never arrived, bulk", false, true}, {"never arrived, single", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := jobstest.New(t, jobstest.Options{NoWorker: true})
			b.Submitter.Enqueuer = nil
			job := submit(b, t, companies(30), ingest.JobOptions{Roles: []string{"CFO"}})
			v := &losingVendor{Vendor: b.Client, billed: c.billed, seen: map[string]bool{}}
			// The clock an hour back: a row's retry is due at once.
			proc := jobs.NewProcessor(b.Store, v, noLimit{}, jobs.ProcessorConfig{Bulk: c.bulk, VendorMarksReplays: true,
				Now: func() time.Time { return time.Now().Add(-time.Hour) }}, b.Log)
			ctx := context.Background()
			j, err := b.Store.JobByID(ctx, job.ID)
			if err != nil {
				t.Fatal(err)
			}
			for round := 0; round < 5; round++ {
				for chunk := range j.ChunkCount {
					if _, err := proc.ProcessChunk(ctx, store.ChunkRef{JobID: job.ID, Chunk: chunk}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if j, _ = b.Store.JobByID(ctx, job.ID); j.State != domain.JobCompleted {
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
		})
	}
}
