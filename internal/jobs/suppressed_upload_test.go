package jobs_test

import (
	"context"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// An erased person uploaded again is a skipped row that keeps none of its
// input: no email, URL, name, company or extras in the rows, the extras
// table or the results; the caller's ref stays unless it holds the person.
func TestSuppressedReuploadStoresNoInput(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	key := []byte("an erasure key of at least thirty-two characters")
	b.Submitter.ErasureKey = key
	ctx := context.Background()
	hash := func(s string) []byte { return jobs.KeyedHash(key, s) }
	for _, p := range []store.Person{{Email: "jane.doe@acme.example"}, {Name: "Jo Roe", Company: "Beta AG"}} {
		if _, err := b.Store.Erase(ctx, store.EraseRequest{Tenant: "acme", KeyID: "test", Person: p, Keys: jobs.PersonKeys, Hash: hash}); err != nil {
			t.Fatal(err)
		}
	}
	job := b.Submit(t, []ingest.RowIn{
		{Ref: "crm-1", Email: "Jane.Doe@acme.example", Extra: map[string]string{"phone": "+49 30 1234567"}},
		{Ref: "jane.doe@acme.example", Email: "jane.doe@acme.example"},
		{Ref: "crm-3", Name: "Jo  Roe", Company: "Beta AG", Extra: map[string]string{"note": "met at fair"}},
		{Ref: "crm-4", Email: "kim@gamma.example", Extra: map[string]string{"owner": "kim"}},
	}, ingest.JobOptions{})

	rows := storetest.StoredRows(t, b.Store, job.ID)
	if len(rows) != 4 {
		t.Fatalf("%d rows stored, want 4", len(rows))
	}
	wantRef := []string{"crm-1", "", "crm-3"}
	for i, r := range rows[:3] {
		if r.State != string(domain.RowSkipped) || !strings.HasPrefix(r.Reason, "suppressed: erased on ") {
			t.Errorf("row %d: %s %q, want skipped as suppressed", i+1, r.State, r.Reason)
		}
		if r.Ref != wantRef[i] || r.ProfileURL+r.Name+r.Company+r.Domain+r.Email+r.Role+r.FoundProfile != "" {
			t.Errorf("row %d keeps %+v; want only the ref %q", i+1, r, wantRef[i])
		}
	}
	if r := rows[3]; r.State != string(domain.RowPending) || r.Email != "kim@gamma.example" || r.Ref != "crm-4" {
		t.Errorf("the row of a person not erased: %+v", r)
	}
	if n := storetest.PersonalTraces(t, b.Store, "acme")["job_input_extras"]; n != 1 {
		t.Errorf("%d input rows' extras stored, want 1 (the person not erased)", n)
	}
	results, err := b.Store.ListResults(ctx, job.ID, "", 0, 10)
	if err != nil || len(results) != 4 {
		t.Fatalf("results: %d, %v", len(results), err)
	}
	for _, r := range results[:3] {
		if r.ProfileURL+r.Name+r.Company+r.Domain+r.Email+r.Role != "" || len(r.Extra) != 0 {
			t.Errorf("result of row %d shows %+v", r.InputRow, r)
		}
	}
	if r := results[3]; r.Extra["owner"] != "kim" {
		t.Errorf("the row of a person not erased lost its extras: %+v", r.Extra)
	}
}
