package jobstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
)

// Companies is n rows of a company each ("crm-0000", "Company 0 GmbH", ...).
func Companies(n int) []ingest.RowIn {
	rows := make([]ingest.RowIn, n)
	for i := range rows {
		rows[i] = ingest.RowIn{Ref: fmt.Sprintf("crm-%04d", i), Company: fmt.Sprintf("Company %d GmbH", i)}
	}
	return rows
}

// NamedCompanies is n rows of a company each, their refs and names tagged
// ("tag-0000", "tag Company 0 GmbH", ...): lists of one test that differ.
func NamedCompanies(tag string, n int) []ingest.RowIn {
	rows := make([]ingest.RowIn, n)
	for i := range rows {
		rows[i] = ingest.RowIn{Ref: fmt.Sprintf("%s-%04d", tag, i), Company: fmt.Sprintf("%s Company %d GmbH", tag, i)}
	}
	return rows
}

// Submit stores a job of rows of tenant acme through the API's submit path.
func (b *Bundle) Submit(t *testing.T, rows []ingest.RowIn, opts ingest.JobOptions) store.Job {
	t.Helper()
	return b.SubmitFor(t, "acme", rows, opts)
}

// SubmitFor stores a job of rows of tenant (made when new) through the API's
// submit path and fails the test unless it is created. Without lookups it
// looks the profile up; without a max age it takes the cache's answers of
// the last 30 days.
func (b *Bundle) SubmitFor(t *testing.T, tenant string, rows []ingest.RowIn, opts ingest.JobOptions) store.Job {
	t.Helper()
	if _, err := b.Store.EnsureTenant(context.Background(), tenant); err != nil {
		t.Fatal(err)
	}
	if opts.Lookups == nil {
		opts.Lookups = []domain.Stage{domain.StageProfile}
	}
	if opts.MaxAge == 0 {
		opts.MaxAge = 720 * time.Hour
	}
	job, created, err := b.Submitter.Submit(context.Background(), Submission(tenant, rows, opts))
	if err != nil || !created {
		t.Fatalf("submit: created=%v err=%v", created, err)
	}
	return job
}

// Submission is the JSON submission of rows of tenant with opts, as given.
func Submission(tenant string, rows []ingest.RowIn, opts ingest.JobOptions) service.Submission {
	return service.Submission{Tenant: tenant, Format: "json", Options: opts,
		Feed: func(emit func(ingest.Lookup) error) error {
			return ingest.ExpandRows(rows, ingest.Options{Roles: opts.Roles}, ingest.DefaultLimits(), emit)
		}}
}
