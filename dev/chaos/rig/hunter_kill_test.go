package rig_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/hunter"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
)

// dyingFinder is the Hunter-shaped adapter of a worker killed right after
// its calls of one stage left: each such call is made (the vendor bills a
// found email or a verdict it charges for, a miss or a free verdict not),
// then never comes back. Calls block until release is closed; calls of
// other stages pass.
type dyingFinder struct {
	*hunter.Vendor
	stage        domain.Stage
	release      <-chan struct{}
	billed, free atomic.Int64
}

func (d *dyingFinder) Ask(ctx context.Context, q enrich.Question, key string) (enrich.Answer, error) {
	a, err := d.Vendor.Ask(ctx, q, key)
	if !slices.Contains(q.Stages, d.stage) {
		return a, err
	}
	if err == nil && a.Charge.Credits > 0 {
		d.billed.Add(1)
	} else if err == nil {
		d.free.Add(1)
	}
	<-d.release
	return a, err
}

// A worker killed (SIGKILL) with calls in flight to the keyless vendor
// without charge headers (found emails or verdicts it billed, misses and
// free verdicts it did not), at its finder or at its verifier: its rows are
// retried by the other workers, which ask the same questions again (billed
// again when found), and verify what they find. The killed calls stay of
// unknown outcome at their worst case when the job completes; the next
// quiet reading of the key (a worker's periodic witness) settles them at
// the prices their retries propose, and the ledger equals the vendor's
// counters to the search and the verification.
func TestWorkerKilledWithKeylessCallsInFlight(t *testing.T) {
	t.Parallel()
	for _, stage := range []domain.Stage{domain.StageEmail, domain.StageVerify} {
		t.Run(string(stage), func(t *testing.T) {
			t.Parallel()
			killedWithKeylessCallsInFlight(t, stage)
		})
	}
}

func killedWithKeylessCallsInFlight(t *testing.T, stage domain.Stage) {
	r := newRig(t, rigConfig{processor: jobs.ProcessorConfig{Lease: time.Second, LookupConcurrency: 4}})
	opts := enrichtest.DefaultHunterOptions()
	opts.Knows = func(l enrichtest.Lookup) bool {
		return !strings.HasSuffix(l.Name, "1") && !strings.HasSuffix(l.Name, "4")
	}
	opts.UnknownRate = 0.3 // verdicts the vendor does not charge for
	fake := enrichtest.NewHunter(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	finder := func() *hunter.Vendor {
		v, err := hunter.New(hunter.Config{Name: "hunter", BaseURL: srv.URL, APIKey: "test-key", HTTPClient: &http.Client{Timeout: 5 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	lanes := func(v enrich.Vendor) func(jobs.Limiter) []jobs.VendorConfig {
		return func(l jobs.Limiter) []jobs.VendorConfig {
			return []jobs.VendorConfig{{Vendor: v, Limiter: l, Account: "chaos-hunter"}}
		}
	}

	const n = 120
	in := make([]ingest.RowIn, n)
	for i := range in {
		in[i] = ingest.RowIn{Ref: fmt.Sprintf("hk-%03d", i), Name: fmt.Sprintf("Ann Kill%03d", i), Domain: fmt.Sprintf("acme-kill-%d.com", i)}
	}
	id := r.submit(in, domain.StageEmail, domain.StageVerify)
	release := make(chan struct{})
	doomed := &dyingFinder{Vendor: finder(), stage: stage, release: release}
	w := r.startWorker(workerConfig{shutdownTimeout: 100 * time.Millisecond, lanes: lanes(doomed)})
	t.Cleanup(func() { close(release) }) // runs before the worker's cleanup
	r.eventually(10*time.Second, "billed and free calls in flight on the doomed worker", func() bool {
		return doomed.billed.Load() >= 2 && doomed.free.Load() >= 1
	})
	w.kill()
	billedBeforeKill := fake.Usage("test-key")

	r.startWorker(workerConfig{lanes: lanes(finder())})
	survivor := r.startWorker(workerConfig{lanes: lanes(finder())})
	if p := r.waitDone(id, 60*time.Second); p.state != "completed" || p.terminal != n {
		t.Fatalf("job %s with %d of %d rows ended, want completed with every row: %+v", p.state, p.terminal, n, p)
	}
	if p := r.progress(id); p.total != n {
		t.Fatalf("%d rows, want %d", p.total, n)
	}
	var lostCalls int // the killed calls: of unknown outcome, or settled by a reading of the key already
	for _, e := range r.ledger(id) {
		if e.Status == store.LedgerUnknown || strings.Contains(e.Error, "quiet readings of the key") {
			lostCalls++
		}
	}
	if lostCalls < 3 {
		t.Fatalf("%d calls of unknown outcome when the job completed, want the killed ones (%d billed, %d free)",
			lostCalls, doomed.billed.Load(), doomed.free.Load())
	}

	// The workers' periodic witness, at a quiet moment of the key.
	settled, err := survivor.proc.WitnessKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var searches, verifications, unknown int64
	var witnessed int
	for _, e := range r.ledger(id) {
		switch {
		case e.Status == store.LedgerReserved:
			t.Errorf("ledger %d still reserved", e.ID)
		case e.Stage == domain.StageVerify:
			verifications += e.Charged
		default:
			searches += e.Charged
		}
		if e.Status == store.LedgerUnknown {
			unknown++
		}
		if strings.Contains(e.Error, "quiet readings of the key") {
			witnessed++
		}
	}
	u := fake.Usage("test-key")
	t.Logf("killed %s calls: %d billed, %d free (vendor's counters at the kill %+v); %d of unknown outcome at completion, %d settled by the key's reading; ledger %d searches, %d verifications; vendor %+v",
		stage, doomed.billed.Load(), doomed.free.Load(), billedBeforeKill, lostCalls, settled, searches, verifications, u)
	if searches != u.Searches || verifications != u.Verifications {
		t.Errorf("ledger %d searches and %d verifications, the vendor's counters %+v", searches, verifications, u)
	}
	if unknown != 0 || witnessed != lostCalls {
		t.Errorf("%d calls still of unknown outcome, %d of %d settled by the key's reading", unknown, witnessed, lostCalls)
	}
	if u.Verifications == 0 {
		t.Error("nothing verified: the verify stage was not exercised")
	}
	job, err := r.direct.JobByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if job.CreditsSpent != searches+verifications {
		t.Errorf("the job says %d spent, its ledger %d", job.CreditsSpent, searches+verifications)
	}
}
