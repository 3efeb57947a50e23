package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
)

// Rows that name their company by website run as domain lookups, single and
// bulk, against the fake vendor: the vendor is asked (role, domain), never
// the company name, and each answer is the one it gives that question.
func TestPipelineDomainLookups(t *testing.T) {
	t.Parallel()
	for _, bulk := range []bool{false, true} {
		t.Run(fmt.Sprintf("bulk=%v", bulk), func(t *testing.T) {
			t.Parallel()
			b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: bulk}})
			rows := make([]ingest.RowIn, 30)
			for i := range rows {
				rows[i] = ingest.RowIn{Ref: fmt.Sprint("a-", i), Company: fmt.Sprintf("Firm %d", i), Domain: fmt.Sprintf("https://www.Firm-%d.example/about", i)}
			}
			job := b.Submit(t, rows, ingest.JobOptions{Roles: []string{"CTO"}})
			job = b.WaitJob(t, job.ID, domain.JobCompleted)
			res, err := b.Store.ListResults(context.Background(), job.ID, "", 0, 100)
			if err != nil || len(res) != 30 {
				t.Fatalf("results: %v, %d", err, len(res))
			}
			matched := 0
			for i, r := range res {
				q := enrich.ProfileQuery{Name: "CTO", Domain: fmt.Sprintf("firm-%d.example", i)}
				if r.Kind != domain.InputNameDomain || r.Domain != q.Domain || r.Company != fmt.Sprintf("Firm %d", i) {
					t.Fatalf("row %d: %+v", i, r)
				}
				if hit := b.Vendor.ProfileHit(q); hit != (r.State == domain.RowMatched) {
					t.Fatalf("row %d: state %s, the fake says hit=%v for %+v", i, r.State, hit, q)
				}
				if r.State == domain.RowMatched {
					matched++
					if r.Profile.Role != "CTO" || !strings.EqualFold(r.Profile.Company, fmt.Sprintf("Firm-%d", i)) {
						t.Fatalf("row %d: profile %+v", i, r.Profile)
					}
				}
			}
			if matched == 0 {
				t.Fatal("no row matched: the fake's hit rate should give some")
			}
			b.CheckMoney(t, job.ID)
		})
	}
}
