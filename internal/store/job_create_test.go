package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A job keeps what its upload held, and a domain lookup its domain, through
// a claim and the results.
func TestCreateJobUploadAndDomain(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	up := store.Upload{Columns: map[string]string{"Company Name": "company", "Website": "domain"}, ExtraColumns: []string{"Industry", "Owner"},
		RowsUploaded: ptr(2), DistinctLookups: ptr(1)}
	job, _, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10, Upload: func() store.Upload { return up }},
		func(add func(store.NewRow) error) error {
			for i := range 2 {
				if err := add(store.NewRow{InputRow: i + 1, Kind: domain.InputNameDomain, Name: "CTO", Company: "Acme", Domain: "acme.com"}); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []store.Job{job, mustGet(t, st, job.ID)} {
		u := j.Upload
		if fmt.Sprint(u.Columns) != fmt.Sprint(up.Columns) || fmt.Sprint(u.ExtraColumns) != "[Industry Owner]" || *u.RowsUploaded != 2 || *u.DistinctLookups != 1 {
			t.Fatalf("upload = %+v", u)
		}
	}
	claim, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(claim.Rows) != 2 || claim.Rows[0].Domain != "acme.com" || claim.Rows[0].Kind != domain.InputNameDomain {
		t.Fatalf("claim = %+v, %v", claim, err)
	}
	res, err := st.ListResults(ctx, job.ID, "", 0, 10)
	if err != nil || len(res) != 2 || res[1].Domain != "acme.com" || res[1].Company != "Acme" {
		t.Fatalf("results = %+v, %v", res, err)
	}

	// A job without an upload summary (a member sync, say) records none.
	plain := createJob(t, st, store.NewJob{}, 1)
	if u := plain.Upload; len(u.Columns) != 0 || len(u.ExtraColumns) != 0 || u.RowsUploaded != nil || u.DistinctLookups != nil {
		t.Fatalf("upload of a job without one = %+v", u)
	}
}

func mustGet(t *testing.T, st *store.Store, id string) store.Job {
	t.Helper()
	j, err := st.GetJob(context.Background(), "acme", id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}
