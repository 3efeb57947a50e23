package jobs_test

import (
	"context"
	"sync"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
)

// gatedVerifier holds its first verification until released, so that a
// second run reaches the same address while the first is being verified.
type gatedVerifier struct {
	*enrichtest.Verifier
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (g *gatedVerifier) Ask(ctx context.Context, q enrich.Question, key string) (enrich.Answer, error) {
	first := false
	g.once.Do(func() { first = true; close(g.entered) })
	if first {
		<-g.release
	}
	return g.Verifier.Ask(ctx, q, key)
}

// Two runs that find the same new address at once verify it once: the
// second sees the first's claim, its row waits, and comes back to the
// first's verdict from the cache, bought once and billed to the first.
func TestVerifySameAddressInTwoRunsAtOnceIsBoughtOnce(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	finder := &listFinder{name: "finder", addrs: map[string]string{
		urlOf("twin1", 0): "same.person@acme.example",
		urlOf("twin2", 0): "same.person@acme.example",
	}}
	ver := &gatedVerifier{Verifier: enrichtest.NewVerifier("checker"), entered: make(chan struct{}), release: make(chan struct{})}
	proc := verifyProcessor(t, b, finder, ver)
	opts := ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail, domain.StageVerify}}
	j1 := b.Submit(t, urlRows("twin1", 1), opts)
	j2 := b.Submit(t, urlRows("twin2", 1), opts)

	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := proc.ProcessChunk(ctx, store.ChunkRef{JobID: j1.ID, Chunk: 0})
		first <- err
	}()
	<-ver.entered
	if _, err := proc.ProcessChunk(ctx, store.ChunkRef{JobID: j2.ID, Chunk: 0}); err != nil {
		t.Fatal(err)
	}
	if n := ver.Calls(); n != 0 {
		t.Fatalf("%d verifications finished while the first was held: the second run bought the same address", n)
	}
	close(ver.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	runRounds(t, b, proc, j2.ID, 1)
	b.WaitJob(t, j1.ID, domain.JobCompleted)
	b.WaitJob(t, j2.ID, domain.JobCompleted)

	if n := ver.Calls(); n != 1 {
		t.Errorf("%d verifications of one address, want 1", n)
	}
	for _, j := range []string{j1.ID, j2.ID} {
		res := resultsByRef(t, b.Store, j)
		for ref, r := range res {
			if r.FoundEmail == nil || r.FoundEmail.Status != string(enrichtest.VerdictOf("same.person@acme.example")) {
				t.Errorf("job %s row %s: email %+v, want the address with its one verdict", j, ref, r.FoundEmail)
			}
		}
	}
	if led := verifyLedger(t, b.Store, j2.ID); led["checker/verify"] != 0 {
		t.Errorf("the second job's ledger %v: want no verification bought", led)
	}
	if led := verifyLedger(t, b.Store, j1.ID); led["checker/verify"] != ver.Billed() {
		t.Errorf("the first job's ledger %v, the verifier billed %d", led, ver.Billed())
	}
}
