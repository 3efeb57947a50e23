package jobs_test

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/metrics"
)

// A match the vendor billed that is someone else (a namesake who once
// worked at the company asked) is paid for, not delivered, and counted in
// enrichq_vendor_wrong_person_total{vendor}, single calls and bulk alike:
// an operator sees a vendor's floors too low for a list.
func TestWrongPersonCounted(t *testing.T) {
	t.Parallel()
	for _, bulk := range []bool{false, true} {
		opts := enrichtest.DefaultPDLOptions()
		// Nobody known; the lookups by name the fake answers with a
		// namesake get one scored above the adapter's floor: billed.
		opts.HitRate, opts.WrongPersonRate, opts.WrongLikelihood = 0, 1, 8
		r := newWaterfallRig(t, opts)
		reg := prometheus.NewRegistry()
		m := metrics.NewPipeline(reg)
		job := r.b.Submit(t, people("wrong", 12), ingest.JobOptions{})
		proc := r.processor(t, []string{"pdl"}, jobs.ProcessorConfig{Bulk: bulk, Metrics: m})
		runRounds(t, r.b, proc, job.ID, 1)
		r.b.WaitJob(t, job.ID, domain.JobCompleted)

		counts, err := r.b.Store.RowCounts(t.Context(), job.ID)
		if err != nil {
			t.Fatal(err)
		}
		billed := r.pdl.TotalBilled() // a match a credit, each a namesake
		if got := scrape(t, reg, `enrichq_vendor_wrong_person_total{vendor="pdl"}`); billed < 6 || got != strconv.FormatInt(billed, 10) || counts[domain.RowMatched] != 0 {
			t.Errorf("bulk=%v: %q wrong persons counted, rows %v, the vendor billed %d matches: want each billed one counted, none delivered",
				bulk, got, counts, billed)
		}
		if led := ledgerByVendor(t, r.b.Store, job.ID); led["pdl"] != r.pdl.TotalBilled() {
			t.Errorf("bulk=%v: ledger %v, the vendor billed %d", bulk, led, r.pdl.TotalBilled())
		}
	}
}

// scrape reads one series' value from reg as Prometheus scrapes it ("" when
// it is not there).
func scrape(t *testing.T, reg *prometheus.Registry, series string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// The email finder answering the rows it does not know with a namesake's
// address at another company: each such answer is billed and counted, and
// none is delivered.
func TestHunterAddressAtAnotherCompanyNotDelivered(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultHunterOptions()
	opts.HitRate, opts.WrongDomainRate = 0, 1
	r := newHunterRig(t, opts)
	reg := prometheus.NewRegistry()
	job := r.b.Submit(t, domainPeople("elsewhere", 20), ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail}})
	runRounds(t, r.b, r.processor(t, nil, jobs.ProcessorConfig{Metrics: metrics.NewPipeline(reg)}), job.ID, 1)
	r.b.WaitJob(t, job.ID, domain.JobCompleted)

	byVendor, res := emailSources(t, r.b, job.ID)
	for _, x := range res {
		if x.FoundEmail != nil && strings.Contains(x.FoundEmail.Email, "@elsewhere-") {
			t.Errorf("row %q at %s: delivered %s", x.Name, x.Domain, x.FoundEmail.Email)
		}
	}
	st := r.fake.Stats()
	got := scrape(t, reg, `enrichq_vendor_wrong_person_total{vendor="hunter"}`)
	if st.Wrong == 0 || got != strconv.FormatInt(st.Wrong, 10) || byVendor["hunter"] != 0 {
		t.Errorf("the finder answered %d addresses elsewhere; %q counted, %d of its emails delivered: want each counted, none delivered",
			st.Wrong, got, byVendor["hunter"])
	}
	if led, u := ledgerByVendor(t, r.b.Store, job.ID), r.fake.Usage("test-key"); led["hunter"] != u.Searches || u.Searches != st.Wrong {
		t.Errorf("ledger %v, the finder's counters %+v, %d answers elsewhere", led, u, st.Wrong)
	}
}
