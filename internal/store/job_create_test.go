package store_test

import (
	"context"
	"errors"
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

func TestCreateJobIdempotentAndAtomic(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{IdempotencyKey: "k1"}, 25)
	if job.TotalRows != 25 || job.ChunkCount != 3 || job.State != domain.JobQueued {
		t.Fatalf("job = %+v", job)
	}
	// The same rows under the key: the first job (the feed is read to compare, nothing stored).
	feed := func(n int, company string) func(add func(store.NewRow) error) error {
		return func(add func(store.NewRow) error) error {
			for i := range n {
				if err := add(store.NewRow{InputRow: i + 1, Ref: fmt.Sprint("r", i), Kind: domain.InputNameCompany, Name: "VP Sales",
					Company: fmt.Sprint(company, i), Extra: map[string]string{"crm": "x"}}); err != nil {
					return err
				}
			}
			return nil
		}
	}
	again, created, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10, IdempotencyKey: "k1"},
		feed(25, "Co "))
	if err != nil || created || again.ID != job.ID {
		t.Fatalf("replay: id=%s created=%v err=%v, want %s", again.ID, created, err, job.ID)
	}
	// Other rows, or other options, under the key: refused.
	if _, _, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10, IdempotencyKey: "k1"},
		feed(25, "Other ")); !errors.Is(err, store.ErrIdempotencyKeyReused) {
		t.Fatalf("other rows under the key: %v", err)
	}
	if _, _, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10, IdempotencyKey: "k1",
		RequestOptions: []byte(`{"budget": 5}`)}, feed(25, "Co ")); !errors.Is(err, store.ErrIdempotencyKeyReused) {
		t.Fatalf("other options under the key: %v", err)
	}
	// Another tenant with the same key gets its own job.
	other := createJob(t, st, store.NewJob{Tenant: "beta", IdempotencyKey: "k1"}, 1)
	if other.ID == job.ID {
		t.Fatal("tenants share idempotency keys")
	}
	if _, err := st.GetJob(ctx, "beta", job.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other tenant's job: err = %v, want ErrNotFound", err)
	}
	// A feed that fails stores nothing.
	boom := errors.New("row 7 is bad")
	_, _, err = st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10, IdempotencyKey: "k2"},
		func(add func(store.NewRow) error) error {
			for i := range 6000 { // more than one COPY batch
				if err := add(store.NewRow{InputRow: i + 1, Kind: domain.InputEmail, Email: "a@b.c"}); err != nil {
					return err
				}
			}
			return boom
		})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	var jobs, rows int
	if err := store.PoolForTest(st).QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM job_rows)`).Scan(&jobs, &rows); err != nil {
		t.Fatal(err)
	}
	if jobs != 2 || rows != 26 {
		t.Fatalf("after a failed feed: %d jobs, %d rows; want 2 and 26", jobs, rows)
	}
}

// Every character a cell may hold comes back as it went in, in the rows and
// in their extras; a skipped row keeps its ref and no extras; a U+0000 is
// ErrInvalidInput and stores nothing.
func TestCreateJobKeepsEveryCharacter(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	odd := "a\\b\tc\nd\re \\N \"q\" \\\\t ü €\x01 end"
	rows := []store.NewRow{
		{InputRow: 1, Ref: odd, Kind: domain.InputNameCompany, Name: odd, Company: odd, Role: odd,
			Extra: map[string]string{odd: odd, "plain": "x", "empty": ""}},
		{InputRow: 2, Ref: "keep", Kind: domain.InputEmail, Email: "kim@example.com", Extra: map[string]string{"crm": "y"}, SkipReason: "suppressed"},
		{InputRow: 3, Ref: `\N`, Kind: domain.InputEmail, Email: "x@example.com"},
	}
	job, _, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10},
		func(add func(store.NewRow) error) error {
			for _, r := range rows {
				if err := add(r); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.ListResults(ctx, job.ID, "", 0, 10)
	if err != nil || len(res) != 3 {
		t.Fatalf("results = %+v, %v", res, err)
	}
	if r := res[0]; r.Ref != odd || r.Name != odd || r.Company != odd || r.Extra[odd] != odd || r.Extra["plain"] != "x" ||
		r.Extra["empty"] != "" || len(r.Extra) != 3 {
		t.Fatalf("row 1 = %+v", r)
	}
	if r := res[1]; r.Ref != "keep" || len(r.Extra) != 0 || r.Email != "" {
		t.Fatalf("skipped row 2 = %+v", r)
	}
	if r := res[2]; r.Ref != `\N` || r.Email != "x@example.com" {
		t.Fatalf("row 3 = %+v", r)
	}

	_, _, err = st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10},
		func(add func(store.NewRow) error) error {
			return add(store.NewRow{InputRow: 1, Kind: domain.InputNameCompany, Name: "CTO", Company: "Ac\x00me"})
		})
	if !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("a U+0000: %v, want ErrInvalidInput", err)
	}
	var jobs int
	if err := store.PoolForTest(st).QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&jobs); err != nil || jobs != 1 {
		t.Fatalf("jobs after a refused one: %d, %v", jobs, err)
	}
}
