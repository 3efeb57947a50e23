package service_test

import (
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
)

func TestStatusOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	started := now.Add(-time.Minute)
	finished := now.Add(-time.Second)
	budget := int64(10)
	cases := []struct {
		name     string
		job      store.Job
		counts   map[domain.RowState]int
		progress float64
		eta      *int64
	}{
		{"queued", store.Job{State: domain.JobQueued}, map[domain.RowState]int{domain.RowPending: 4}, 0, nil},
		{"started, nothing done", store.Job{State: domain.JobRunning, StartedAt: &started}, map[domain.RowState]int{domain.RowInFlight: 4}, 0, nil},
		{"running", store.Job{State: domain.JobRunning, StartedAt: &started}, map[domain.RowState]int{domain.RowMatched: 1, domain.RowFailed: 1, domain.RowPending: 1}, 2.0 / 3, ptr[int64](30)},
		{"paused", store.Job{State: domain.JobPaused, StartedAt: &started}, map[domain.RowState]int{domain.RowMatched: 1, domain.RowPending: 1}, 0.5, nil},
		{"completed", store.Job{State: domain.JobCompleted, StartedAt: &started, FinishedAt: &finished}, map[domain.RowState]int{domain.RowMatched: 2, domain.RowSkipped: 2}, 1, ptr[int64](0)},
	}
	for _, c := range cases {
		c.job.BudgetCredits = &budget
		st := service.StatusOf(c.job, c.counts, now)
		if st.Progress != c.progress || (st.ETASeconds == nil) != (c.eta == nil) || c.eta != nil && *st.ETASeconds != *c.eta {
			t.Errorf("%s: progress %v eta %v, want %v %v", c.name, st.Progress, st.ETASeconds, c.progress, c.eta)
		}
		if st.Credits.Budget == nil || *st.Credits.Budget != 10 || st.Lookups == nil {
			t.Errorf("%s: %+v", c.name, st)
		}
	}
}

func ptr[T any](v T) *T { return &v }
