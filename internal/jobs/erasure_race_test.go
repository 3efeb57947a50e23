package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// holdingVendor answers as the vendor does, then holds its first profile
// answer (the worker has it, nothing is saved yet) until the test lets go.
type holdingVendor struct {
	Vendor
	once     sync.Once
	answered chan *enrich.Profile
	release  chan struct{}
}

func (v *holdingVendor) Bulk(ctx context.Context, rows []enrich.ProfileQuery, include []domain.Stage, key string) (seed.BulkResult, error) {
	res, err := v.Vendor.Bulk(ctx, rows, include, key)
	v.once.Do(func() {
		var found *enrich.Profile
		if err == nil && len(res.Items) > 0 {
			found = res.Items[0].Profile
		}
		v.answered <- found
		<-v.release
	})
	return res, err
}

func (v *holdingVendor) Profile(ctx context.Context, q enrich.ProfileQuery, key string) (seed.ProfileResult, error) {
	res, err := v.Vendor.Profile(ctx, q, key)
	v.once.Do(func() {
		v.answered <- res.Profile
		<-v.release
	})
	return res, err
}

// An erasure that comes between the vendor's answer and the worker's save
// leaves nothing of the person: the row an erasure removed writes neither
// results, markers nor a cache entry; a row whose person was found in flight
// (a company and role that found the erased profile) is stored skipped with
// its input blanked, and its later stages are not bought.
func TestErasureRacingAnInFlightRow(t *testing.T) {
	t.Parallel()
	erasureKey := []byte("an erasure key of at least thirty-two characters")
	for _, c := range []struct {
		name string
		row  func(b *jobstest.Bundle) ingest.RowIn
		// person: whom to erase, given what the vendor found
		person func(in ingest.RowIn, found *enrich.Profile) store.Person
		rows   int // rows left: 0 when the erasure found the row
	}{
		{"the row erased", func(b *jobstest.Bundle) ingest.RowIn {
			for i := range 200 {
				email := fmt.Sprintf("person%d@acme.example", i)
				if b.Vendor.ProfileHit(enrich.ProfileQuery{Email: email}) {
					return ingest.RowIn{Ref: "crm-1", Email: email, Extra: map[string]string{"owner": "kim"}}
				}
			}
			t.Fatal("no email the fake vendor finds")
			return ingest.RowIn{}
		}, func(in ingest.RowIn, _ *enrich.Profile) store.Person { return store.Person{Email: in.Email} }, 0},
		{"the person found in flight", func(b *jobstest.Bundle) ingest.RowIn {
			for i := range 200 {
				company := fmt.Sprintf("Company %d GmbH", i)
				if b.Vendor.ProfileHit(enrich.ProfileQuery{Name: "VP Sales", Company: company}) {
					return ingest.RowIn{Ref: "crm-1", Company: company, Role: "VP Sales", Extra: map[string]string{"owner": "kim"}}
				}
			}
			t.Fatal("no company the fake vendor finds")
			return ingest.RowIn{}
		}, func(_ ingest.RowIn, found *enrich.Profile) store.Person {
			return store.Person{ProfileURL: found.ProfileURL}
		}, 1},
	} {
		for _, bulk := range []bool{false, true} {
			name := c.name + ", single"
			if bulk {
				name = c.name + ", bulk"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := jobstest.New(t, jobstest.Options{NoWorker: true})
				b.Submitter.Enqueuer = nil
				in := c.row(b)
				job := b.Submit(t, []ingest.RowIn{in}, ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}})
				v := &holdingVendor{Vendor: b.Client, answered: make(chan *enrich.Profile), release: make(chan struct{})}
				proc := jobs.NewProcessor(b.Store, []jobs.VendorConfig{jobstest.SeedVendor(v, noLimit{}, "")}, jobs.ProcessorConfig{ErasureKey: erasureKey, Bulk: bulk}, b.Log)
				ctx := context.Background()

				done := make(chan error, 1)
				go func() {
					_, err := proc.ProcessChunk(ctx, store.ChunkRef{JobID: job.ID, Chunk: 0})
					done <- err
				}()
				found := <-v.answered
				if found == nil {
					close(v.release)
					t.Fatal("the vendor found nobody")
				}
				receipt, err := b.Store.Erase(ctx, store.EraseRequest{Tenant: "acme", KeyID: "test", Person: c.person(in, found),
					Keys: jobs.PersonKeys, Hash: func(s string) []byte { return jobs.KeyedHash(erasureKey, s) }})
				close(v.release)
				if err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if _, err := b.Maintainer.RunOnce(ctx); err != nil { // the feed advancer, among others
					t.Fatal(err)
				}

				traces := storetest.PersonalTraces(t, b.Store, "acme")
				t.Logf("receipt %v; left %v", receipt.Receipt, traces)
				for table, n := range traces {
					if table == "job_rows" {
						continue
					}
					if n != 0 {
						t.Errorf("%s: %d left of the erased person", table, n)
					}
				}
				if traces["job_rows"] != c.rows {
					t.Errorf("%d rows left, want %d", traces["job_rows"], c.rows)
				}
				if c.rows == 1 {
					r := storetest.StoredRows(t, b.Store, job.ID)[0]
					if r.State != string(domain.RowSkipped) || !strings.HasPrefix(r.Reason, "suppressed: erased on ") || r.Ref != in.Ref {
						t.Errorf("row %+v, want skipped as suppressed with its ref", r)
					}
				}
				if n := b.Vendor.Stats().ByEndpoint["email"]; n != 0 {
					t.Errorf("%d email lookups bought for an erased person", n)
				}
			})
		}
	}
}
