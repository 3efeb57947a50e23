package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/enrichq/enrichq/internal/apitest"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/platform/platformtest"
	"github.com/enrichq/enrichq/internal/service"
)

// Environment of the browser test (docs/web.md, "Tests").
const (
	// envSkipBrowser set to 1 skips the browser test; without it, a machine
	// where no browser starts fails the test, saying why.
	envSkipBrowser = "ENRICHQ_SKIP_BROWSER"
	// envBrowser is the browser to run; default: chromium, google-chrome
	// and the other names chromedp looks for on the PATH.
	envBrowser = "ENRICHQ_BROWSER"
)

// shotDir is where the pages' screenshots go, from the module root.
const shotDir = ".data/ui"

// TestInBrowser uses the page as a person would, in a real headless
// chromium: sign in (a wrong key first), upload a file, read the estimate,
// confirm, watch the job complete against the fake vendor, download the
// results and compare them with the API's; a job paused by its budget is
// raised and completes; another tenant's job is not found; every page is
// screenshot under .data/ui/, on a laptop's width and a phone's.
func TestInBrowser(t *testing.T) {
	if os.Getenv(envSkipBrowser) == "1" {
		t.Skipf("%s=1: the browser test is skipped", envSkipBrowser)
	}
	t.Parallel()
	began := time.Now()
	ctx := startBrowser(t) // first: without a browser there is nothing to set up
	s := newStack(t, jobstest.Options{Vendor: func(o *enrichtest.SeedOptions) { o.Latency = 50 * time.Millisecond }}, true)

	shots := screenshots(t, ctx)
	base := s.URL

	// Sign in: a wrong key is refused, the right one opens the jobs.
	do(t, ctx, "open the page", chromedp.Navigate(base+"/"))
	if loc := location(t, ctx); !strings.HasSuffix(loc, "/ui/signin") {
		t.Fatalf("signed out, / led to %s, want the sign-in page", loc)
	}
	shots("signin")
	do(t, ctx, "type a wrong key", chromedp.SendKeys(chromedp.ID("key"), "not-a-key"))
	navigate(t, ctx, "send a wrong key", chromedp.Click(chromedp.CSS(`#signin button`)))
	if msg := text(t, ctx, chromedp.ID("signin-error")); !strings.Contains(msg, "not known") {
		t.Fatalf("a wrong key: the page says %q", msg)
	}
	shots("signin-refused")
	do(t, ctx, "type the key", chromedp.SendKeys(chromedp.ID("key"), keyA))
	navigate(t, ctx, "sign in", chromedp.Click(chromedp.CSS(`#signin button`)))
	if loc := location(t, ctx); !strings.HasSuffix(loc, "/ui/jobs") || strings.Contains(loc, keyA) {
		t.Fatalf("signed in at %s, want /ui/jobs (and never the key in a URL)", loc)
	}
	if stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie + JSON.stringify(localStorage) + JSON.stringify(sessionStorage)`)); err != nil || strings.Contains(stored, keyA) || strings.Contains(stored, "enrichq_session") {
		t.Fatalf("script can read the session or the key: %q (%v)", stored, err)
	}

	// A new job: a file, roles, lookups, a budget; the estimate is the API's.
	dir := t.TempDir()
	list := filepath.Join(dir, "companies.csv")
	const companies = 40
	if err := os.WriteFile(list, []byte(apitest.CompaniesCSV(companies)), 0o600); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "open the new-job form", chromedp.Navigate(base+"/ui/jobs/new"),
		chromedp.SetUploadFiles(chromedp.ID("file"), []string{list}),
		chromedp.SendKeys(chromedp.ID("name"), "Browser test: 40 companies"),
		chromedp.SendKeys(chromedp.ID("roles"), "VP Sales"),
		chromedp.Click(chromedp.CSS(`input[name=lookups][value=email]`)),
		chromedp.SendKeys(chromedp.ID("budget"), "100000"))
	shots("new-job")
	navigate(t, ctx, "ask for the estimate", chromedp.Click(chromedp.CSS(`#newjob button[type=submit]`)))
	waitFor(t, ctx, "the estimate", `#estimate`)
	shots("estimate")
	estMin, estMax := number(t, text(t, ctx, chromedp.ID("est-min"))), number(t, text(t, ctx, chromedp.ID("est-max")))
	q := url.Values{"dry_run": {"true"}, "roles": {"VP Sales"}, "lookups": {"profile,email"}, "budget_credits": {"100000"}}
	resp, body := s.call(t, http.MethodPost, "/v1/jobs?"+q.Encode(), keyA, "text/csv", strings.NewReader(apitest.CompaniesCSV(companies)))
	var apiEst struct{ Credits struct{ Min, Max int64 } }
	if err := json.Unmarshal(body, &apiEst); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("API dry run: %s %s", resp.Status, body)
	}
	if estMin != apiEst.Credits.Min || estMax != apiEst.Credits.Max {
		t.Fatalf("the page estimates %d to %d credits, the API %d to %d", estMin, estMax, apiEst.Credits.Min, apiEst.Credits.Max)
	}
	if amount := text(t, ctx, chromedp.ID("confirm-button")); !strings.Contains(amount, strconv.FormatInt(min(estMax, 100000), 10)) &&
		!strings.Contains(amount, commas(min(estMax, 100000))) {
		t.Fatalf("the confirm button says %q, want the amount %d", amount, min(estMax, 100000))
	}

	// Confirm, and watch the job complete on its page (it polls).
	navigate(t, ctx, "confirm the job", chromedp.Click(chromedp.ID("confirm-button")))
	jobID := strings.TrimPrefix(mustPath(t, location(t, ctx)), "/ui/jobs/")
	if len(jobID) != 36 {
		t.Fatalf("after confirming, at %s: want a job's page", location(t, ctx))
	}
	waitFor(t, ctx, "the job to complete", `#job[data-state="completed"]`)
	if st := text(t, ctx, chromedp.ID("job-state")); st != "Done" {
		t.Fatalf("the completed job's state reads %q", st)
	}
	var api struct {
		State string
		Rows  map[string]int
	}
	_, body = s.call(t, http.MethodGet, "/v1/jobs/"+jobID, keyA, "", nil)
	_ = json.Unmarshal(body, &api)
	if m := number(t, text(t, ctx, chromedp.ID("count-matched"))); api.State != "completed" || int(m) != api.Rows["matched"] || api.Rows["total"] != companies {
		t.Fatalf("the page shows %d matched; the API: %s", m, body)
	}
	shots("job-done")

	// Download CSV and JSON lines: the very files the API answers.
	for _, d := range []struct{ link, format string }{{"download-csv", "csv"}, {"download-jsonl", "ndjson"}} {
		got := download(t, ctx, dir, d.link)
		_, want := s.call(t, http.MethodGet, "/v1/jobs/"+jobID+"/results?format="+d.format, keyA, "", nil)
		if string(got) != string(want) || len(want) == 0 {
			t.Fatalf("%s: the page's download (%d bytes) differs from the API's (%d bytes)", d.format, len(got), len(want))
		}
	}

	// The jobs list shows it, newest first.
	do(t, ctx, "open the jobs", chromedp.Navigate(base+"/ui/jobs"))
	if first := attr(t, ctx, `#jobs tbody tr`, "data-job"); first != jobID {
		t.Fatalf("the first job listed is %q, want %s", first, jobID)
	}
	shots("jobs")

	// A job paused by its budget: raise it, and it completes.
	do(t, ctx, "open the new-job form", chromedp.Navigate(base+"/ui/jobs/new"),
		chromedp.SetUploadFiles(chromedp.ID("file"), []string{list}),
		chromedp.SendKeys(chromedp.ID("name"), "Browser test: a small budget"),
		chromedp.SendKeys(chromedp.ID("roles"), "CTO"),
		chromedp.SendKeys(chromedp.ID("budget"), "10"))
	navigate(t, ctx, "ask for the estimate", chromedp.Click(chromedp.CSS(`#newjob button[type=submit]`)))
	if amount := text(t, ctx, chromedp.ID("confirm-amount")); amount != "10 credits" {
		t.Fatalf("with a budget of 10 the page asks to confirm %q", amount)
	}
	navigate(t, ctx, "confirm the job", chromedp.Click(chromedp.ID("confirm-button")))
	waitFor(t, ctx, "the job to pause", `#paused`)
	if why := text(t, ctx, chromedp.ID("pause-reason")); !strings.Contains(why, "budget") {
		t.Fatalf("paused, the page says %q", why)
	}
	shots("job-paused")
	do(t, ctx, "type a new budget", chromedp.SendKeys(chromedp.ID("new-budget"), "100000"))
	navigate(t, ctx, "raise the budget", chromedp.Click(chromedp.CSS(`#raise button`)))
	waitFor(t, ctx, "the raised job to complete", `#job[data-state="completed"]`)
	shots("job-resumed-done")

	// Another tenant's job is not found, even by its id.
	resp, body = s.call(t, http.MethodPost, "/v1/jobs?roles=CTO", keyB, "text/csv", strings.NewReader(apitest.CompaniesCSV(2)))
	var other struct{ ID string }
	if err := json.Unmarshal(body, &other); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("tenant B's job: %s %s", resp.Status, body)
	}
	do(t, ctx, "open tenant B's job", chromedp.Navigate(base+"/ui/jobs/"+other.ID))
	if msg := text(t, ctx, chromedp.ID("message")); !strings.Contains(msg, "Not found") {
		t.Fatalf("another tenant's job: the page says %q", msg)
	}
	shots("not-found")

	// Platform members: two connect through the consent screen, one must
	// connect again.
	do(t, ctx, "open the members", chromedp.Navigate(base+"/ui/members"))
	if n := text(t, ctx, chromedp.ID("connected-count")); n != "0" {
		t.Fatalf("before any consent, %s members are connected", n)
	}
	for _, m := range []platformtest.Member{{ID: "m-ada", FirstName: "Ada", LastName: "Lovelace", Email: "ada@example.com", Headline: "Head of Sales"},
		{ID: "m-bob", FirstName: "Bob", LastName: "Stone", Email: "bob@example.com", Headline: "Account Executive"}} {
		s.Platform.AddMember(m)
		s.Platform.SignIn(m.ID) // the member, signed in at the platform, consents
		do(t, ctx, "open the members", chromedp.Navigate(base+"/ui/members"))
		navigate(t, ctx, "connect "+m.ID, chromedp.Click(chromedp.ID("connect")))
		if loc := mustPath(t, location(t, ctx)); loc != "/v1/platform/callback" {
			t.Fatalf("after the consent screen, at %s", loc)
		}
	}
	members, err := s.Store.ListPlatformMembers(context.Background(), tenantA, service.MemberFilter{Limit: 10})
	if err != nil || len(members) != 2 {
		t.Fatalf("members: %d, %v", len(members), err)
	}
	for _, m := range members {
		if m.MemberID == "m-bob" {
			if _, err := s.Store.MarkMemberNeedsReauth(context.Background(), m.ID, "the member revoked the app at the platform"); err != nil {
				t.Fatal(err)
			}
		}
	}
	do(t, ctx, "open the members", chromedp.Navigate(base+"/ui/members"))
	if c, r := text(t, ctx, chromedp.ID("connected-count")), text(t, ctx, chromedp.ID("reconnect-count")); c != "1" || r != "1" {
		t.Fatalf("the page counts %s connected and %s to reconnect, want 1 and 1", c, r)
	}
	shots("members")

	// A phone's width: nothing wider than the screen.
	do(t, ctx, "be a phone", chromedp.EmulateViewport(390, 844))
	for _, p := range []struct{ path, name string }{{"/ui/jobs", "jobs-phone"}, {"/ui/jobs/" + jobID, "job-phone"}, {"/ui/jobs/new", "new-job-phone"}} {
		do(t, ctx, "open "+p.path, chromedp.Navigate(base+p.path))
		fits, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
		if err != nil || !fits {
			t.Errorf("%s is wider than a phone (%v)", p.path, err)
		}
		shots(p.name)
	}

	// Sign out: the page is closed again.
	navigate(t, ctx, "sign out", chromedp.Click(chromedp.CSS(`.signout button`)))
	do(t, ctx, "open the jobs", chromedp.Navigate(base+"/ui/jobs"))
	if loc := location(t, ctx); !strings.HasSuffix(loc, "/ui/signin") {
		t.Fatalf("signed out, the jobs led to %s", loc)
	}
	t.Logf("browser test: %s (screenshots in %s)", time.Since(began).Round(100*time.Millisecond), shotDir)
}

// startBrowser starts a headless chromium for the test, or fails it saying
// how to get one.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	if p := os.Getenv(envBrowser); p != "" {
		opts = append(opts, chromedp.ExecPath(p))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// The first call starts the browser, for as long as ctx lives: no
	// timeout here (a missing browser fails at once).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("no browser could start: %v\n"+
			"Install one (Debian: apt-get install -y chromium), or name it with %s=/path/to/chrome;\n"+
			"%s=1 skips this test.", err, envBrowser, envSkipBrowser)
	}
	return ctx
}

// screenshots returns a function writing the page's full screenshot as
// .data/ui/NN-name.png, numbered in the order taken.
func screenshots(t *testing.T, ctx context.Context) func(name string) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, shotDir)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	n := 0
	return func(name string) {
		t.Helper()
		n++
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(out, strconv.Itoa(n/10)+strconv.Itoa(n%10)+"-"+name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// stepTimeout bounds one step of the browser: a page, a click, a wait.
const stepTimeout = 30 * time.Second

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// navigate runs a step that loads a page (a click on a link or a form's
// button) and waits for the page.
func navigate(t *testing.T, ctx context.Context, what string, step chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.RunResponse(ctx, step); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func waitFor(t *testing.T, ctx context.Context, what, css string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(css))); err != nil {
		loc, _ := chromedp.Run(context.WithoutCancel(ctx), chromedp.Location())
		t.Fatalf("waiting for %s (%s) at %s: %v", what, css, loc, err)
	}
}

func text[S chromedp.Selectable](t *testing.T, ctx context.Context, sel S) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("the text of %v: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func attr(t *testing.T, ctx context.Context, css, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(css), name))
	if err != nil {
		t.Fatalf("%s's %s: %v", css, name, err)
	}
	return v.Value
}

func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustPath(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Path
}

// download clicks the link of id and returns the file the browser saved.
func download(t *testing.T, ctx context.Context, dir, id string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	into := filepath.Join(dir, id)
	if err := os.MkdirAll(into, 0o755); err != nil {
		t.Fatal(err)
	}
	progress := chromedp.Events(ctx, browser.DownloadProgress)
	err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			events := true
			_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: into, EventsEnabled: &events})
			return err
		}),
		chromedp.Click(chromedp.ID(id)))
	if err != nil {
		t.Fatalf("download %s: %v", id, err)
	}
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("download %s: %v", id, err)
		}
		switch ev.State {
		case browser.DownloadProgressStateCompleted:
			b, err := os.ReadFile(filepath.Join(into, ev.GUID))
			if err != nil {
				t.Fatal(err)
			}
			return b
		case browser.DownloadProgressStateCanceled:
			t.Fatalf("download %s: canceled by the browser", id)
		}
	}
	t.Fatalf("download %s: %v", id, errors.New("no completed download"))
	return nil
}

// number reads "1,234 credits" or "1,234" as 1234.
func number(t *testing.T, s string) int64 {
	t.Helper()
	f := strings.Fields(strings.ReplaceAll(s, ",", ""))
	if len(f) == 0 {
		t.Fatalf("no number in %q", s)
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		t.Fatalf("no number in %q", s)
	}
	return n
}

// commas writes n as the page does: 12,345.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
