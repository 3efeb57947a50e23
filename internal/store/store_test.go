package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

func ptr[T any](v T) *T { return &v }

func createJob(t *testing.T, st *store.Store, nj store.NewJob, n int) store.Job {
	t.Helper()
	if nj.Tenant == "" {
		nj.Tenant = "acme"
	}
	if nj.Lookups == nil {
		nj.Lookups = []domain.Stage{domain.StageProfile}
	}
	if nj.ChunkSize == 0 {
		nj.ChunkSize = 10
	}
	job, created, err := st.CreateJob(context.Background(), nj, func(add func(store.NewRow) error) error {
		for i := range n {
			if err := add(store.NewRow{InputRow: i + 1, Ref: fmt.Sprint("r", i), Kind: domain.InputNameCompany, Name: "VP Sales", Company: fmt.Sprint("Co ", i),
				Extra: map[string]string{"crm": "x"}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || !created {
		t.Fatalf("CreateJob: created=%v err=%v", created, err)
	}
	return job
}

// A database that cannot be reached is ErrUnavailable (the API answers 503,
// workers try again), not an error of the query.
func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	st := storetest.Unreachable(t)
	_, err := st.JobByID(context.Background(), "00000000-0000-0000-0000-000000000001")
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}
