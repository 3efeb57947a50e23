package web_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// cspWatch records, in every page the browser opens, the CSP violations
// the page reports (securitypolicyviolation): the pages must cause none.
const cspWatch = `window.__csp = []; document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));`

// TestBuyerInBrowser is the buyer's walk in a real chromium: the job's
// answers and pay by vendor drawn, its results not cut; the vendors page
// with its month and charts; a watch made from the job through its
// estimate and confirm, run (the vendor now answers with a new company),
// its changes read, paused and resumed; then another tenant sees none of
// it. No page reports a CSP violation; each is screenshot at 1280 and 390
// pixels wide under .data/ui/ (buyer-*), and fits a phone.
func TestBuyerInBrowser(t *testing.T) {
	if os.Getenv(envSkipBrowser) == "1" {
		t.Skipf("%s=1: the browser test is skipped", envSkipBrowser)
	}
	t.Parallel()
	ctx := startBrowser(t)
	s, mv := buyerStack(t)
	jobID := finishedJob(t, s, keyA, 12)
	paid := paidTo(t, s, keyA, jobID, "vendor")
	shot := screenshots(t, ctx)
	if _, err := chromedp.Run(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	noViolation := func(where string) {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp || ['no watch installed']`))
		if err != nil || len(got) > 0 {
			t.Errorf("%s: CSP violations %v (%v)", where, got, err)
		}
	}
	// drawn: the chart in css has bars, each with a size, and a filled part.
	drawn := func(where, css string) {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => {
			const bars = [...document.querySelectorAll(`+"`"+css+` svg.chart-bar`+"`"+`)];
			if (!bars.length || bars.some(b => { const r = b.getBoundingClientRect(); return r.width < 20 || r.height < 5; })) return 0;
			return [...document.querySelectorAll(`+"`"+css+` svg.chart-bar rect:not(.chart-track)`+"`"+`)].filter(r => r.getBoundingClientRect().width > 0).length;
		})()`))
		if err != nil || n == 0 {
			t.Errorf("%s: no chart drawn in %s (%d filled bars, %v)", where, css, n, err)
		}
	}
	// both widths: screenshot at 1280, then at 390 where nothing may be wider than the screen.
	both := func(name string) {
		t.Helper()
		shot("buyer-" + name)
		do(t, ctx, "be a phone", chromedp.EmulateViewport(390, 844))
		fits, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
		if err != nil || !fits {
			t.Errorf("%s is wider than a phone (%v)", name, err)
		}
		shot("buyer-" + name + "-phone")
		do(t, ctx, "be a laptop", chromedp.EmulateViewport(1280, 900))
	}

	do(t, ctx, "open the sign-in", chromedp.Navigate(s.URL+"/ui/signin"), chromedp.SendKeys(chromedp.ID("key"), keyA))
	navigate(t, ctx, "sign in", chromedp.Click(chromedp.CSS(`#signin button`)))

	// The job: answers and pay by vendor, and every result cell whole.
	do(t, ctx, "open the job", chromedp.Navigate(s.URL+"/ui/jobs/"+jobID))
	drawn("the job", "#answers-chart")
	drawn("the job", "#paid-chart")
	if got := text(t, ctx, chromedp.CSS(`#paid-chart .chart-figure`)); !strings.HasPrefix(got, credits(paid)+" for ") {
		t.Errorf("the job's pay to vendor reads %q, the API says %d credits", got, paid)
	}
	// Cut: a cell whose text overflows it, or the table wider than its
	// card (the rest would hide behind a scroll bar).
	cut := `[...document.querySelectorAll('#preview td')].filter(td => td.scrollWidth > td.clientWidth + 1).length +
		(document.querySelector('#preview').getBoundingClientRect().right > document.querySelector('#preview').closest('.card').getBoundingClientRect().right ? 100 : 0)`
	for _, width := range []int64{1280, 390} {
		do(t, ctx, "resize", chromedp.EmulateViewport(width, 900))
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](cut))
		if err != nil || n > 0 {
			t.Errorf("at %d px, %d result cells are cut (%v)", width, n, err)
		}
	}
	do(t, ctx, "be a laptop", chromedp.EmulateViewport(1280, 900))
	noViolation("the job")
	both("job")

	// The vendors page, from the signed-in page's link.
	navigate(t, ctx, "open the vendors", chromedp.Click(chromedp.ID("nav-vendors")))
	drawn("the vendors", "#spend")
	drawn("the vendors", "#segments")
	if got := text(t, ctx, chromedp.CSS(`tr[data-vendor="vendor"] .vendor-spent`)); got != commas(paid) {
		t.Errorf("the vendors page says %q spent at vendor; the job paid %d", got, paid)
	}
	if w := text(t, ctx, chromedp.ID("warnings")); !strings.Contains(w, otherVendor) {
		t.Errorf("the warnings say %q, want %s out", w, otherVendor)
	}
	t.Logf("vendors page: %s", strings.Join(strings.Fields(text(t, ctx, chromedp.CSS(`tr[data-vendor="vendor"]`))), " "))
	noViolation("the vendors")
	both("vendors")

	// A watch from the job: the estimate, the confirm naming the amount.
	do(t, ctx, "open the job", chromedp.Navigate(s.URL+"/ui/jobs/"+jobID))
	navigate(t, ctx, "keep the list fresh", chromedp.Click(chromedp.ID("watch-this")))
	do(t, ctx, "set the cap", chromedp.SetValue(chromedp.ID("watch-cap"), "5000"))
	navigate(t, ctx, "see the estimate", chromedp.Click(chromedp.ID("watch-estimate")))
	amount := text(t, ctx, chromedp.ID("watch-confirm-amount"))
	if !strings.HasSuffix(amount, "credits") || !strings.Contains(text(t, ctx, chromedp.ID("watch-confirm-button")), amount) {
		t.Errorf("the confirm names %q", amount)
	}
	noViolation("the watch's estimate")
	both("watch-confirm")
	navigate(t, ctx, "make the watch", chromedp.Click(chromedp.ID("watch-confirm-button")))
	watchPath := mustPath(t, location(t, ctx))
	if !strings.HasPrefix(watchPath, "/ui/watches/") {
		t.Fatalf("after confirming, at %s", watchPath)
	}

	// Run it now: the vendor answers every profile with a new company.
	mv.on.Store(true)
	navigate(t, ctx, "run now", chromedp.Click(chromedp.CSS(`#watch-run button`)))
	waitFor(t, ctx, "the run's job", "#run-job")
	deadline := time.Now().Add(60 * time.Second)
	for {
		do(t, ctx, "reload the watch", chromedp.Navigate(s.URL+watchPath))
		n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#changes tbody tr').length`))
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no change listed a minute after the run")
		}
		time.Sleep(300 * time.Millisecond)
	}
	row := strings.Join(strings.Fields(text(t, ctx, chromedp.CSS(`#changes tbody tr`))), " ")
	if !strings.Contains(row, "crm-") || !strings.Contains(row, "NewCo Ltd") || !strings.Contains(row, "vendor") {
		t.Errorf("the first change reads %q", row)
	}
	t.Logf("watch page, first change: %s", row)
	noViolation("the watch")
	both("watch")
	navigate(t, ctx, "pause", chromedp.Click(chromedp.CSS(`#watch-pause button`)))
	if st := text(t, ctx, chromedp.ID("watch-state")); st != "paused" {
		t.Errorf("paused, the watch reads %q", st)
	}
	navigate(t, ctx, "resume", chromedp.Click(chromedp.CSS(`#watch-pause button`)))
	if st := text(t, ctx, chromedp.ID("watch-state")); st != "active" {
		t.Errorf("resumed, the watch reads %q", st)
	}
	do(t, ctx, "open the watches", chromedp.Navigate(s.URL+"/ui/watches"))
	noViolation("the watches")
	both("watches")

	// The header the browser got, and the one an HTTP client gets.
	resp, _ := s.call(t, http.MethodGet, "/ui/vendors", "", "", nil)
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'self'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("the vendors page's CSP is %q", csp)
	}

	// Tenant B: none of A's month, vendor out or watch.
	navigate(t, ctx, "sign out", chromedp.Click(chromedp.CSS(`.signout button`)))
	do(t, ctx, "type B's key", chromedp.SendKeys(chromedp.ID("key"), keyB))
	navigate(t, ctx, "sign in as B", chromedp.Click(chromedp.CSS(`#signin button`)))
	do(t, ctx, "B opens the vendors", chromedp.Navigate(s.URL+"/ui/vendors"))
	if got := text(t, ctx, chromedp.CSS(`tr[data-vendor="vendor"] .vendor-spent`)); got != "0" {
		t.Errorf("tenant B sees %q spent at vendor", got)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#warnings').length`)); n != 0 {
		t.Error("tenant B sees warnings (tenant A's vendor out)")
	}
	shot("buyer-vendors-other-tenant")
	do(t, ctx, "B opens the watches", chromedp.Navigate(s.URL+"/ui/watches"))
	waitFor(t, ctx, "no watches", "#no-watches")
	do(t, ctx, "B opens A's watch", chromedp.Navigate(s.URL+watchPath))
	if msg := text(t, ctx, chromedp.ID("message")); !strings.Contains(msg, "Not found") {
		t.Errorf("tenant B opens tenant A's watch: %q", msg)
	}
	t.Logf("screenshots in %s (buyer-*)", shotDir)
}
