package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

// The vendors and watches pages over HTTP: the tenant's own spend per
// vendor, its vendor out and the warning; a watch made through its
// estimate and confirm, run, paused, resumed and deleted by forms with the
// CSRF token; another tenant sees none of it.
func TestBuyerPages(t *testing.T) {
	t.Parallel()
	s, _ := buyerStack(t)
	jobID := finishedJob(t, s, keyA, 6)
	paid := paidTo(t, s, keyA, jobID, "vendor")
	if paid == 0 {
		t.Fatal("the job paid the vendor nothing: nothing to show")
	}

	a := s.person(t)
	a.signIn(keyA)
	_, body := a.get("/ui/jobs")
	if !strings.Contains(body, `href="/ui/vendors"`) || !strings.Contains(body, `href="/ui/watches"`) {
		t.Fatal("the signed-in page links no vendors or watches page")
	}

	// Vendors: the month's spend is the job's, the vendor out is said, the chart drawn.
	resp, body := a.get("/ui/vendors")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/ui/vendors: %s\n%.600s", resp.Status, body)
	}
	if got := cell(t, body, "vendor", "vendor-spent"); got != commas(paid) {
		t.Errorf("the vendors page says vendor was paid %q this month, the job's costs %d", got, paid)
	}
	for _, want := range []string{"out of credits (402)", otherVendor + " is out of your waterfall", `class="chart-bar"`, "Profile URLs, any country", "Expected charge per row"} {
		if !strings.Contains(body, want) {
			t.Errorf("the vendors page lacks %q", want)
		}
	}
	// The orders shown are those auto uses now: the vendor out is skipped.
	if orders := between(body, "The order auto uses", "</section>"); orders == "" || strings.Contains(orders, otherVendor) {
		t.Errorf("the orders auto uses now name %s, which is out:\n%.1500s", otherVendor, orders)
	}

	// The job's page: answers by vendor and the vendor's pay, drawn.
	_, body = a.get("/ui/jobs/" + jobID)
	if !strings.Contains(body, `id="answers-chart"`) || !strings.Contains(body, "profile · vendor") || !strings.Contains(body, credits(paid)+" for ") {
		t.Errorf("the job's page lacks its vendors' charts or the pay of %d:\n%.2000s", paid, between(body, `id="job-vendors"`, "</section>"))
	}

	// A watch: the estimate names the month's amount, which is what the watch then says.
	_, body = a.get("/ui/watches?job_id=" + jobID)
	token := csrf(t, body)
	form := url.Values{"csrf": {token}, "job_id": {jobID}, "every": {"30d"}, "monthly_cap_credits": {"5000"}}
	resp, body = a.post("/ui/watches/estimate", form)
	amount := regexp.MustCompile(`id="watch-confirm-amount">([^<]+)<`).FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || amount == nil {
		t.Fatalf("the estimate: %s\n%.1500s", resp.Status, body)
	}
	est, err := s.Service.EstimateWatch(context.Background(), service.Principal{Tenant: tenantA, Scopes: []domain.Scope{domain.ScopeRead}}, service.NewWatch{JobID: jobID, Every: "30d", MonthlyCapCredits: ptr(int64(5000))})
	if err != nil || amount[1] != credits(est.Month.Max) {
		t.Fatalf("the confirm names %q; the service estimates %+v (%v)", amount[1], est, err)
	}
	if list, _ := s.Service.ListWatches(context.Background(), service.Principal{Tenant: tenantA, Scopes: []domain.Scope{domain.ScopeRead}}, "", 10); len(list.Watches) != 0 {
		t.Fatalf("the estimate made a watch: %+v", list.Watches)
	}
	bad := url.Values{"csrf": {token}, "job_id": {jobID}, "every": {"2d"}, "monthly_cap_credits": {"5000"}}
	if resp, body := a.post("/ui/watches/estimate", bad); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "minimum of 7d") {
		t.Errorf("every 2d: %s, want 422 naming the minimum", resp.Status)
	}
	if resp, _ := a.post("/ui/watches", url.Values{"job_id": {jobID}, "every": {"30d"}, "monthly_cap_credits": {"5000"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a watch without the CSRF token: %s, want 403", resp.Status)
	}
	resp, body = a.post("/ui/watches", form)
	watchPath := resp.Request.URL.Path
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(watchPath, "/ui/watches/") || !strings.Contains(body, "The watch is made") {
		t.Fatalf("make the watch: %s at %s\n%.600s", resp.Status, watchPath, body)
	}
	resp, body = a.post(watchPath+"/run", url.Values{"csrf": {token}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="run-job"`) {
		t.Fatalf("run now: %s\n%.600s", resp.Status, body)
	}
	for _, st := range []string{"paused", "active"} {
		resp, body = a.post(watchPath+"/state", url.Values{"csrf": {token}, "state": {st}})
		if got := between(body, `id="watch-state">`, "<"); resp.StatusCode != http.StatusOK || got != st {
			t.Errorf("set %s: %s, the page says %q", st, resp.Status, got)
		}
	}

	// Tenant B: its own (empty) month, no vendor out, no watch; A's watch is not found.
	b := s.person(t)
	b.signIn(keyB)
	_, body = b.get("/ui/vendors")
	if got := cell(t, body, "vendor", "vendor-spent"); got != "0" {
		t.Errorf("tenant B's vendors page shows %q spent at vendor (tenant A's?)", got)
	}
	if strings.Contains(body, otherVendor+" is out of your waterfall") || strings.Contains(body, "out of credits (402)") || strings.Contains(body, "(out now)") {
		t.Error("tenant B's vendors page shows tenant A's vendor out")
	}
	_, body = b.get("/ui/watches")
	if !strings.Contains(body, `id="no-watches"`) || strings.Contains(body, jobID) {
		t.Error("tenant B's watches page shows tenant A's watch or job")
	}
	if resp, _ := b.get(watchPath); resp.StatusCode != http.StatusNotFound {
		t.Errorf("tenant B opens tenant A's watch: %s, want 404", resp.Status)
	}
	if resp, _ := b.post(watchPath+"/delete", url.Values{"csrf": {csrf(t, body)}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("tenant B deletes tenant A's watch: %s, want 404", resp.Status)
	}

	// A deletes it.
	resp, body = a.post(watchPath+"/delete", url.Values{"csrf": {token}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="no-watches"`) {
		t.Errorf("delete: %s at %s", resp.Status, resp.Request.URL.Path)
	}
}

// cell is the text of the td of class in the row of data-vendor vendor.
func cell(t *testing.T, body, vendor, class string) string {
	t.Helper()
	row := between(body, `data-vendor="`+vendor+`"`, "</tr>")
	m := regexp.MustCompile(`class="[^"]*\b` + class + `\b[^"]*">([^<]*)<`).FindStringSubmatch(row)
	if m == nil {
		t.Fatalf("no %s cell for %s in:\n%.1500s", class, vendor, body)
	}
	return strings.TrimSpace(m[1])
}

func between(s, from, to string) string {
	_, after, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	in, _, _ := strings.Cut(after, to)
	return in
}

func credits(n int64) string {
	if n == 1 {
		return "1 credit"
	}
	return commas(n) + " credits"
}

func ptr[T any](v T) *T { return &v }
