package maintenance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
	"github.com/enrichq/enrichq/internal/webhook"
)

// clock is a moved clock shared by the workers, the scheduler and the service.
type clock struct{ at atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.at.Store(t.UnixNano()); return c }
func (c *clock) Now() time.Time   { return time.Unix(0, c.at.Load()).UTC() }
func (c *clock) Move(d time.Duration) {
	c.at.Add(int64(d))
}
func (c *clock) Set(t time.Time) { c.at.Store(t.UnixNano()) }

// changingVendor wraps the fake vendor: once moved, the people of moved
// answer with another company and those of gone are not found any more.
type changingVendor struct {
	mu     sync.Mutex
	moved  map[string]bool // profile URLs
	gone   map[string]bool
	on     bool
	miss   string // a profile URL the fake does not match
	fv     *enrichtest.Seed
	inner  http.Handler
	calls  atomic.Int64 // profile calls
	byURL  map[string]int
	urlsMu sync.Mutex
}

func (v *changingVendor) wrap(h http.Handler) http.Handler {
	v.inner = h
	v.fv = h.(*enrichtest.Seed)
	for i := 0; ; i++ {
		u := fmt.Sprintf("https://platform.example/in/nobody-%d", i)
		if !v.fv.ProfileHit(enrich.ProfileQuery{ProfileURL: u}) {
			v.miss = u
			break
		}
	}
	return v
}

func (v *changingVendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/profile" {
		v.inner.ServeHTTP(w, r)
		return
	}
	v.calls.Add(1)
	u := r.URL.Query().Get("profile_url")
	v.urlsMu.Lock()
	v.byURL[u]++
	v.urlsMu.Unlock()
	v.mu.Lock()
	moved, gone := v.on && v.moved[u], v.on && v.gone[u]
	v.mu.Unlock()
	if gone {
		q := r.URL.Query()
		q.Set("profile_url", v.miss)
		r.URL.RawQuery = q.Encode()
	}
	if !moved {
		v.inner.ServeHTTP(w, r)
		return
	}
	enrichtest.ServeEdited(w, r, v.inner, func(a map[string]any) { a["company"] = "NewCo Ltd" })
}

func (v *changingVendor) flip() {
	v.mu.Lock()
	v.on = true
	v.mu.Unlock()
}

func personURL(i int) string { return fmt.Sprintf("https://platform.example/in/person-%03d", i) }

// submitURLs submits a profile job of the people from..to-1 and waits for it.
func submitURLs(t *testing.T, b *jobstest.Bundle, from, to int) store.Job {
	t.Helper()
	rows := make([]ingest.RowIn, 0, to-from)
	for i := from; i < to; i++ {
		rows = append(rows, ingest.RowIn{Ref: fmt.Sprintf("crm-%03d", i), ProfileURL: personURL(i)})
	}
	job, created, err := b.Submitter.Submit(context.Background(), service.Submission{
		Tenant: "acme", Format: "json", Options: ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile}, MaxAge: 30 * 24 * time.Hour},
		Feed: func(emit func(ingest.Lookup) error) error {
			return ingest.ExpandRows(rows, ingest.Options{}, ingest.DefaultLimits(), emit)
		},
	})
	if err != nil || !created {
		t.Fatalf("submit: %v %v", created, err)
	}
	return b.WaitJob(t, job.ID, domain.JobCompleted)
}

// waitDiffed waits for a run's job to reach one of states and steps the
// scheduler until its differ has compared the run (a run stopped at its
// budget once its last answers are saved); it returns the job then.
func waitDiffed(t *testing.T, b *jobstest.Bundle, jobID string, states ...domain.JobState) store.Job {
	t.Helper()
	b.WaitJob(t, jobID, states...)
	ctx := context.Background()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(30 * time.Second); !storetest.WatchRunDiffed(t, b.Store, jobID); <-tick.C {
		if _, err := b.Maintainer.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s not compared after 30s", jobID)
		}
	}
	job, err := b.Store.JobByID(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

func changes(t *testing.T, svc *service.Service, p service.Principal, watchID string) []service.WatchChange {
	t.Helper()
	page, err := svc.WatchChanges(context.Background(), p, watchID, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return page.Changes
}

// A watch over 100 people with a vendor whose answers change for some of
// them between runs, on a moved clock: each run buys only the answers
// older than the watch's period (vendor calls counted), each change is
// reported once (change lines, the feed's changed lines, a signed
// person.changed webhook), and a run repeated by the scheduler changes
// nothing.
func TestWatchLifeOnAMovedClock(t *testing.T) {
	t.Parallel()
	t0 := time.Now().UTC().Truncate(time.Second)
	clk := newClock(t0.Add(-5 * 24 * time.Hour))
	cv := &changingVendor{moved: map[string]bool{}, gone: map[string]bool{}, byURL: map[string]int{}}
	b := jobstest.New(t, jobstest.Options{VendorHandler: cv.wrap, Processor: jobs.ProcessorConfig{Now: clk.Now},
		Maintenance: maintenance.Settings{Now: clk.Now, ChunkSize: 20}})
	ctx := context.Background()
	if _, err := b.Store.EnsureTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	b.Submitter.WebhooksEnabled, b.Submitter.AllowPrivateCallbacks = true, true
	svc := service.New(service.Config{Store: b.Store, Submitter: b.Submitter, Now: clk.Now, ErasureKey: []byte("0123456789abcdef0123456789abcdef")})
	acme := service.Principal{Tenant: "acme", KeyID: "k", Scopes: []domain.Scope{domain.ScopeRead, domain.ScopeSubmit, domain.ScopeAdmin}}

	// Five days before, 40 of the people were bought; the list of 100 then
	// buys the other 60 and takes the 40 from the cache.
	submitURLs(t, b, 0, 40)
	clk.Set(t0)
	src := submitURLs(t, b, 0, 100)
	if got := cv.calls.Load(); got != 100 {
		t.Fatalf("vendor calls for the list: %d, want 100 (40 then 60)", got)
	}

	var hooks []*http.Request
	var hookBodies [][]byte
	var hookMu sync.Mutex
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hookMu.Lock()
		hooks, hookBodies = append(hooks, r), append(hookBodies, body)
		hookMu.Unlock()
	}))
	t.Cleanup(receiver.Close)
	capCredits := int64(1000)
	created, err := svc.CreateWatch(ctx, acme, service.NewWatch{JobID: src.ID, Every: "7d", MonthlyCapCredits: &capCredits,
		CallbackURL: receiver.URL})
	if err != nil {
		t.Fatal(err)
	}
	w := created.Watch
	if w.Inputs != 100 || created.Estimate.CreditsPerRun.Max != 100 || created.Estimate.Month.Max != 429 {
		t.Fatalf("watch %+v, estimate %+v: want 100 inputs, 100 credits a run, 429 a month (30/7 runs)", w, created.Estimate)
	}

	// Which people move and which are gone: among the matched ones, some in
	// the 40 bought early, some in the 60.
	matched := map[int]bool{}
	for i := range 100 {
		matched[i] = b.Vendor.ProfileHit(enrich.ProfileQuery{ProfileURL: personURL(i)})
	}
	var movedEarly, movedLate, goneLate []int
	for i := range 100 {
		switch {
		case !matched[i]:
		case i < 40 && len(movedEarly) < 3:
			movedEarly = append(movedEarly, i)
		case i >= 40 && len(movedLate) < 4:
			movedLate = append(movedLate, i)
		case i >= 40 && len(goneLate) < 2:
			goneLate = append(goneLate, i)
		}
	}
	for _, i := range append(append([]int{}, movedEarly...), movedLate...) {
		cv.moved[personURL(i)] = true
	}
	for _, i := range goneLate {
		cv.gone[personURL(i)] = true
	}
	cv.flip()

	// Three days on, a run now buys the 40 answers older than 7 days.
	clk.Move(3 * 24 * time.Hour)
	before := cv.calls.Load()
	run, err := svc.RunWatch(ctx, acme, w.ID, "")
	if err != nil || run.JobID == nil || run.Rows != 100 {
		t.Fatalf("run now: %+v %v", run, err)
	}
	first := waitDiffed(t, b, *run.JobID, domain.JobCompleted)
	if got := cv.calls.Load() - before; got != 40 || first.CreditsSpent != 40 {
		t.Fatalf("first run: %d vendor calls, %d credits; want the 40 stale answers bought", got, first.CreditsSpent)
	}
	if got := changes(t, svc, acme, w.ID); len(got) != len(movedEarly) {
		t.Fatalf("changes after the first run: %+v, want the %d early movers", got, len(movedEarly))
	}

	// The scheduled slot, a week after the watch was made: the 60 answers
	// of the list are stale, the 40 of the first run are not.
	clk.Set(w.NextRunAt.Add(time.Minute))
	before = cv.calls.Load()
	if _, err := b.Maintainer.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	runs := storetest.WatchRunJobs(t, b.Store, w.ID)
	if len(runs) != 2 {
		t.Fatalf("runs after the slot: %v", runs)
	}
	second := waitDiffed(t, b, runs[1], domain.JobCompleted)
	if got := cv.calls.Load() - before; got != 60 || second.CreditsSpent != 60 {
		t.Fatalf("scheduled run: %d vendor calls, %d credits; want the 60 stale answers", got, second.CreditsSpent)
	}
	// The scheduler stepped again (a leader after a crash): nothing new.
	if _, err := b.Maintainer.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(storetest.WatchRunJobs(t, b.Store, w.ID)); n != 2 {
		t.Fatalf("runs after another sweep: %d", n)
	}

	all := changes(t, svc, acme, w.ID)
	want := len(movedEarly) + len(movedLate) + len(goneLate)
	if len(all) != want {
		t.Fatalf("changes: %d %+v, want %d", len(all), all, want)
	}
	seen := map[string]int{}
	for _, c := range all {
		seen[c.Ref+"/"+c.Field]++
		switch c.Field {
		case "company":
			if c.Kind != store.ChangeChanged || c.New == nil || *c.New != "NewCo Ltd" || c.Old == nil || *c.Old == "" {
				t.Errorf("company change: %+v", c)
			}
		case "match":
			if c.Kind != store.ChangeNotFoundAnyMore || c.New != nil {
				t.Errorf("a person not found any more: %+v", c)
			}
		default:
			t.Errorf("unexpected change: %+v", c)
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s reported %d times", k, n)
		}
	}

	// The feed has a changed line for each.
	if _, err := b.Store.AdvanceResultsFeed(ctx); err != nil {
		t.Fatal(err)
	}
	if feedChanged := storetest.FeedChangedLines(t, b.Store, w.ID); feedChanged != want {
		t.Errorf("feed lines of kind changed: %d, want %d", feedChanged, want)
	}
	page, err := svc.Feed(ctx, acme, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	newCo := 0
	for _, l := range page.Results {
		if l.Kind == store.FeedChanged && l.Change != nil && l.Change.WatchID == w.ID && l.Change.New != nil && *l.Change.New == "NewCo Ltd" &&
			strings.HasPrefix(l.Ref, "crm-") {
			newCo++
		}
	}
	if newCo != len(movedEarly)+len(movedLate) {
		t.Errorf("feed lines of a company change read through the feed: %d, want %d", newCo, len(movedEarly)+len(movedLate))
	}

	// A person.changed webhook per run that found company changes, signed
	// with the tenant's secret.
	d := webhook.New(b.Store, webhook.Config{AllowPrivate: true}, b.Log)
	if n, err := d.DeliverDue(ctx); err != nil || n != 2 {
		t.Fatalf("deliveries: %d %v, want 2", n, err)
	}
	secret, err := b.Store.TenantWebhookSecret(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	people := 0
	for i, r := range hooks {
		if r.Header.Get(webhook.EventHeader) != store.EventPersonChanged {
			t.Errorf("event %q", r.Header.Get(webhook.EventHeader))
		}
		if err := webhook.VerifySignature(secret, r.Header.Get(webhook.SignatureHeader), hookBodies[i], 5*time.Minute, time.Now()); err != nil {
			t.Errorf("signature: %v", err)
		}
		var p webhook.PersonChanged
		if err := json.Unmarshal(hookBodies[i], &p); err != nil || p.WatchID != w.ID {
			t.Errorf("payload %s: %v", hookBodies[i], err)
		}
		people += len(p.People)
		if !bytes.Contains(hookBodies[i], []byte("NewCo Ltd")) {
			t.Errorf("payload without the new company: %s", hookBodies[i])
		}
	}
	if people != len(movedEarly)+len(movedLate) {
		t.Errorf("people in the webhooks: %d, want %d", people, len(movedEarly)+len(movedLate))
	}

	// A full re-run (max_age 0s) against the scheduled run's 60.
	before = cv.calls.Load()
	full, err := svc.RunWatch(ctx, acme, w.ID, "0s")
	if err != nil {
		t.Fatal(err)
	}
	fullJob := waitDiffed(t, b, *full.JobID, domain.JobCompleted)
	if got := cv.calls.Load() - before; got != 100 || fullJob.CreditsSpent != 100 {
		t.Fatalf("full re-run: %d calls, %d credits", got, fullJob.CreditsSpent)
	}
	if got := changes(t, svc, acme, w.ID); len(got) != want {
		t.Errorf("changes after a full re-run with nothing new: %d, want %d", len(got), want)
	}
	t.Logf("credits: first run %d, scheduled run %d, full re-run %d", first.CreditsSpent, second.CreditsSpent, fullJob.CreditsSpent)

	// An erasure removes the person from the watch: the input, its
	// snapshot, its change lines and their feed lines.
	erased := movedLate[0]
	if _, err := svc.Erase(ctx, acme, service.ErasureRequest{ProfileURL: personURL(erased)}); err != nil {
		t.Fatal(err)
	}
	inputs, lines, ofRef := storetest.WatchTraces(t, b.Store, w.ID, fmt.Sprintf("crm-%03d", erased))
	if inputs != 99 || lines != want-1 || ofRef != 0 {
		t.Errorf("after the erasure: %d inputs, %d change lines, %d of the person", inputs, lines, ofRef)
	}
	if n := storetest.FeedChangedLines(t, b.Store, w.ID); n != want-1 {
		t.Errorf("feed lines of kind changed after the erasure: %d, want %d", n, want-1)
	}

	// Retention: change lines older than the tenant's window go.
	day := 24 * time.Hour
	if _, err := b.Store.SetRetention(ctx, "acme", "k", &day); err != nil {
		t.Fatal(err)
	}
	purged, err := b.Store.PurgeExpired(ctx, clk.Now().Add(2*day), 1000)
	if err != nil || purged.ChangeLines != int64(want-1) {
		t.Errorf("purged %+v %v, want %d change lines", purged, err, want-1)
	}
}

// The monthly cap, to the credit, across a month boundary: a run that
// would cross it buys what fits and stops at its budget; the watch says
// the cap is reached and when it runs next; a run asked for then is
// refused; the next month's run has the whole cap again.
func TestWatchCapAcrossAMonth(t *testing.T) {
	t.Parallel()
	clk := newClock(time.Date(2027, 1, 30, 9, 0, 0, 0, time.UTC))
	cv := &changingVendor{moved: map[string]bool{}, gone: map[string]bool{}, byURL: map[string]int{}}
	b := jobstest.New(t, jobstest.Options{VendorHandler: cv.wrap, Processor: jobs.ProcessorConfig{Now: clk.Now},
		Maintenance: maintenance.Settings{Now: clk.Now, ChunkSize: 20}})
	ctx := context.Background()
	svc := service.New(service.Config{Store: b.Store, Submitter: b.Submitter, Now: clk.Now})
	acme := service.Principal{Tenant: "acme", KeyID: "k", Scopes: []domain.Scope{domain.ScopeRead, domain.ScopeSubmit}}
	src := submitURLs(t, b, 0, 100)
	capCredits := int64(30)
	created, err := svc.CreateWatch(ctx, acme, service.NewWatch{JobID: src.ID, Every: "7d", MonthlyCapCredits: &capCredits})
	if err != nil {
		t.Fatal(err)
	}
	w := created.Watch
	if !created.Estimate.CappedBy || created.Estimate.Month.Max != 30 {
		t.Errorf("estimate %+v: want the month capped at 30", created.Estimate)
	}

	before := cv.calls.Load()
	run, err := svc.RunWatch(ctx, acme, w.ID, "0s")
	if err != nil || run.Budget != 30 {
		t.Fatalf("run: %+v %v", run, err)
	}
	jan := waitDiffed(t, b, *run.JobID, domain.JobPaused)
	calls := cv.calls.Load() - before
	if jan.CreditsSpent > 30 || jan.CreditsSpent == 0 || calls != jan.CreditsSpent {
		t.Fatalf("January's run: %d credits, %d vendor calls; want at most the cap of 30, every call paid", jan.CreditsSpent, calls)
	}
	view, err := svc.GetWatch(ctx, acme, w.ID)
	if err != nil || !view.Month.CapReached || view.Month.Spent != jan.CreditsSpent || !strings.HasPrefix(view.Note, "cap reached, next run at 2027-02-") {
		t.Fatalf("watch after the cap: %+v %v", view, err)
	}
	// Another run at once is refused: within the interval of runs now (the
	// cap's own refusal, 409 cap_reached, is service's TestWatchRunThrottled).
	var throttled *service.TooManyRequestsError
	if _, err := svc.RunWatch(ctx, acme, w.ID, "0s"); !errors.As(err, &throttled) {
		t.Fatalf("a second run at once (January spent %d): %v", jan.CreditsSpent, err)
	}

	// February: the scheduled run has the whole cap again.
	clk.Set(view.NextRunAt.Add(time.Minute))
	before = cv.calls.Load()
	if _, err := b.Maintainer.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	runs := storetest.WatchRunJobs(t, b.Store, w.ID)
	if len(runs) != 2 {
		t.Fatalf("runs: %v", runs)
	}
	feb := waitDiffed(t, b, runs[1], domain.JobPaused)
	if feb.BudgetCredits == nil || *feb.BudgetCredits != 30 || feb.CreditsSpent > 30 || cv.calls.Load()-before != feb.CreditsSpent {
		t.Fatalf("February's run: budget %v, %d credits", feb.BudgetCredits, feb.CreditsSpent)
	}
	view, err = svc.GetWatch(ctx, acme, w.ID)
	if err != nil || view.Month.Start != "2027-02-01" || view.Month.Spent != feb.CreditsSpent {
		t.Fatalf("February's watch: %+v %v", view.Month, err)
	}
	if jspent, _, _ := b.Store.WatchSpend(ctx, w.ID, time.Date(2027, 1, 15, 0, 0, 0, 0, time.UTC)); jspent != jan.CreditsSpent {
		t.Errorf("January's spend: %d, want %d", jspent, jan.CreditsSpent)
	}
}
