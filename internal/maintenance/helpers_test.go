package maintenance_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
)

// submit submits a profile job of rows for tenant acme.
func submit(b *jobstest.Bundle, t *testing.T, rows []ingest.RowIn, opts ingest.JobOptions) store.Job {
	t.Helper()
	opts.Lookups = []domain.Stage{domain.StageProfile}
	job, created, err := b.Submitter.Submit(context.Background(), jobstest.Submission("acme", rows, opts))
	if err != nil || !created {
		t.Fatalf("submit: created=%v err=%v", created, err)
	}
	return job
}

// queued lists the ids of the tasks waiting in the bundle's queue.
func queued(t *testing.T, b *jobstest.Bundle) []string {
	t.Helper()
	tasks, err := b.Enqueuer.Inspector.ListPendingTasks(b.Queue, asynq.PageSize(1000))
	if err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatal(err)
	}
	var ids []string
	for _, ti := range tasks {
		ids = append(ids, ti.ID)
	}
	return ids
}
