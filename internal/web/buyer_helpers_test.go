package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/service"
)

// mover answers every profile with another company once switched on: a
// watch's run then finds each person moved.
type mover struct {
	on    atomic.Bool
	inner http.Handler
}

func (m *mover) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/profile" || !m.on.Load() {
		m.inner.ServeHTTP(w, r)
		return
	}
	enrichtest.ServeEdited(w, r, m.inner, func(a map[string]any) { a["company"] = "NewCo Ltd" })
}

// Two configured vendors: the one the test pipeline calls ("vendor") and
// a second that tenant A has out of its waterfall.
const otherVendor = "acme-pdl"

// buyerStack is a stack with two configured vendors, answers observed for
// them, and tenant A's second vendor out of credits.
func buyerStack(t *testing.T) (*stack, *mover) {
	t.Helper()
	m := &mover{}
	s := newStack(t, jobstest.Options{VendorHandler: func(h http.Handler) http.Handler { m.inner = h; return m }}, false,
		func(c *service.Config) {
			c.Vendors = config.Vendors{Explore: 0.05, List: []config.VendorSpec{
				{Name: "vendor", Kind: config.VendorSeed, URL: "https://seed.example", Rate: 10, CreditValue: 1, PriorHitRate: 0.5},
				{Name: otherVendor, Kind: config.VendorPDL, URL: "https://pdl.example", Rate: 5, CreditValue: 2, PriorHitRate: 0.5},
			}}
		})
	ctx := context.Background()
	seg := domain.Segment{Kind: domain.InputProfileURL}
	s.Observe(t,
		jobstest.Observed{Tenant: tenantA, Vendor: "vendor", Segment: seg, Stage: domain.StageProfile, Asked: 120, Found: 96, Credits: 96},
		jobstest.Observed{Tenant: tenantA, Vendor: "vendor", Segment: seg, Stage: domain.StageEmail, Asked: 96, Found: 60, Credits: 180},
		jobstest.Observed{Tenant: tenantA, Vendor: otherVendor, Segment: seg, Stage: domain.StageProfile, Asked: 40, Found: 18, Credits: 18})
	if _, err := s.Store.TakeVendorOut(ctx, tenantA, otherVendor, "out of credits (402)", time.Hour); err != nil {
		t.Fatal(err)
	}
	return s, m
}

// peopleCSV is n people by profile URL, with refs.
func peopleCSV(n int) string {
	var b strings.Builder
	b.WriteString("ref,profile_url\n")
	for i := range n {
		fmt.Fprintf(&b, "crm-%03d,https://platform.example/in/person-%03d\n", i, i)
	}
	return b.String()
}

// finishedJob submits n people as key's tenant, looking up profile and
// email, and waits for the job to complete.
func finishedJob(t *testing.T, s *stack, key string, n int) string {
	t.Helper()
	resp, body := s.call(t, http.MethodPost, "/v1/jobs?lookups=profile,email&name=People+to+watch", key, "text/csv", strings.NewReader(peopleCSV(n)))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %s %s", resp.Status, body)
	}
	var st struct{ ID string }
	_ = json.Unmarshal(body, &st)
	s.WaitJob(t, st.ID, domain.JobCompleted)
	return st.ID
}

// paidTo is what the API says a job paid a vendor, in credits.
func paidTo(t *testing.T, s *stack, key, jobID, vendor string) int64 {
	t.Helper()
	_, body := s.call(t, http.MethodGet, "/v1/jobs/"+jobID+"/costs", key, "", nil)
	var c struct {
		ByVendor map[string]struct{ Credits int64 } `json:"by_vendor"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("costs: %v %s", err, body)
	}
	return c.ByVendor[vendor].Credits
}
