package platform_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/platform"
	"github.com/enrichq/enrichq/internal/platform/platformapi"
	"github.com/enrichq/enrichq/internal/platform/platformtest"
	"github.com/enrichq/enrichq/internal/secretbox"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// platformBundle is a member sync pipeline for one test: real Postgres, real
// Redis and asynq workers running platform:sync, the fake platform over
// HTTP, and one fake clock shared by enrichq and the fake.
type platformBundle struct {
	*jobstest.Bundle
	fp      *platformtest.Platform
	fsrv    *httptest.Server
	clock   *platformtest.Clock
	box     *secretbox.Box
	p       *platform.Platform
	sweeper *maintenance.Maintainer // the scheduler's services, the platform's two last
	logs    *lockedBuffer
}

// sweep steps every maintenance service once, the platform's last.
func (pb *platformBundle) sweep(t *testing.T) {
	t.Helper()
	if _, err := pb.sweeper.RunOnce(context.Background()); err != nil {
		t.Fatalf("sweep: %v", err)
	}
}

type platformOptions struct {
	fake      func(*platformtest.Options)
	version   string            // default 202611
	transport http.RoundTripper // of the /rest/me client
	start     time.Time         // the fake clock's start; default a weekday noon UTC
	noWorker  bool
	recheck   time.Duration // default 200ms
	// token, when set, serves the token endpoint in front of the fake's.
	token func(fake http.Handler) http.Handler
}

// lockedBuffer collects logs written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const redirectURL = "https://enrichq.test/v1/platform/callback"

func newPlatformBundle(t *testing.T, o platformOptions) *platformBundle {
	t.Helper()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	if o.start.IsZero() {
		o.start = time.Date(2026, 11, 18, 12, 0, 0, 0, time.UTC)
	}
	clock := platformtest.NewClock(o.start)
	fopts := platformtest.DefaultOptions()
	fopts.Now = clock.Now
	fopts.RedirectURLs = []string{redirectURL}
	if o.fake != nil {
		o.fake(&fopts)
	}
	fp := platformtest.New(fopts)
	fsrv := httptest.NewServer(fp)
	t.Cleanup(fsrv.Close)
	if o.version == "" {
		o.version = "202611"
	}
	client, err := platformapi.NewClient(platformapi.Config{BaseURL: fsrv.URL, Version: o.version,
		HTTPClient: &http.Client{Timeout: 5 * time.Second, Transport: o.transport}})
	if err != nil {
		t.Fatal(err)
	}
	tokenBase := fsrv.URL
	if o.token != nil {
		tsrv := httptest.NewServer(o.token(fp))
		t.Cleanup(tsrv.Close)
		tokenBase = tsrv.URL
	}
	oauth, err := platformapi.NewOAuth(platformapi.OAuthConfig{AuthURL: fsrv.URL + platformtest.PathAuthorize,
		TokenURL: tokenBase + platformtest.PathToken, ClientID: fopts.ClientID, ClientSecret: fopts.ClientSecret, RedirectURL: redirectURL})
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, secretbox.KeySize)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	var w io.Writer = logs
	if testing.Verbose() {
		w = io.MultiWriter(logs, os.Stderr)
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := platform.New(b.Store, b.Enqueuer, platform.Config{Client: client, OAuth: oauth, Box: box,
		ChunkSize: 2, RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond, Recheck: cmp.Or(o.recheck, 200*time.Millisecond),
		Now: clock.Now, Rand: func() float64 { return 0.5 }}, log)
	if err != nil {
		t.Fatal(err)
	}
	if !o.noWorker {
		srv := jobs.NewServer(b.RedisOpt, jobs.ServerConfig{Queue: b.Queue, Concurrency: 4, ShutdownTimeout: 5 * time.Second,
			TaskCheckInterval: 20 * time.Millisecond, DelayedTaskCheckInterval: 50 * time.Millisecond}, log)
		mux := asynq.NewServeMux()
		mux.HandleFunc(platform.TypeSync, p.HandleSync)
		if err := srv.Start(mux); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
	}
	sw := platformMaintainer(b.Store, b.Enqueuer, p, log)
	return &platformBundle{Bundle: b, fp: fp, fsrv: fsrv, clock: clock, box: box, p: p, sweeper: sw, logs: logs}
}

// platformMaintainer runs the scheduler's services with the platform's own
// two after them, as cmd/scheduler does.
func platformMaintainer(st *store.Store, enq *jobs.Enqueuer, p *platform.Platform, log *slog.Logger) *maintenance.Maintainer {
	services := maintenance.Services(st, enq, maintenance.Settings{Recheck: 200 * time.Millisecond}, log)
	services = append(services, platform.NewSyncDispatcher(p, 0), platform.NewTokenSweeper(p, 0))
	return maintenance.NewMaintainer(st, log, services...)
}

// consent visits the consent screen signed in as member and returns the
// callback the platform redirects to.
func (pb *platformBundle) consent(t *testing.T, tenant, member string) platform.Callback {
	t.Helper()
	pb.fp.SignIn(member)
	u, err := pb.p.ConnectURL(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), redirectURL) {
		t.Fatalf("consent screen: %s, Location %q", resp.Status, resp.Header.Get("Location"))
	}
	q := loc.Query()
	return platform.Callback{State: q.Get("state"), Code: q.Get("code"), Error: q.Get("error"), ErrorDescription: q.Get("error_description")}
}

// connect runs the whole connect flow for a member of the fake.
func (pb *platformBundle) connect(t *testing.T, tenant, id, first, last string) store.PlatformMember {
	t.Helper()
	pb.fp.AddMember(platformtest.Member{ID: id, FirstName: first, LastName: last, Headline: first + "'s headline", Email: strings.ToLower(first) + "@example.com"})
	m, err := pb.p.CompleteConnect(context.Background(), pb.consent(t, tenant, id))
	if err != nil {
		t.Fatalf("connect %s: %v", id, err)
	}
	return m
}

func (pb *platformBundle) submit(t *testing.T, req platform.SyncRequest) store.Job {
	t.Helper()
	if req.Tenant == "" {
		req.Tenant = "acme"
	}
	job, created, err := pb.p.SubmitSync(context.Background(), req)
	if err != nil || !created {
		t.Fatalf("submit sync: %v %v", created, err)
	}
	return job
}

// wait runs the scheduler's sweep and the platform's steps until the job is
// in one of states, or until check reports true when given.
func (pb *platformBundle) wait(t *testing.T, id string, check func(store.Job, map[domain.RowState]int) bool) (store.Job, map[domain.RowState]int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pb.sweep(t)
		job, err := pb.Store.JobByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		counts, err := pb.Store.RowCounts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if check(job, counts) {
			return job, counts
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s (%s), rows %v", id, job.State, job.StateReason, counts)
		}
		time.Sleep(20 * time.Millisecond) // polling real asynq workers, not a guess at a duration
	}
}

func inState(states ...domain.JobState) func(store.Job, map[domain.RowState]int) bool {
	return func(j store.Job, _ map[domain.RowState]int) bool {
		for _, s := range states {
			if j.State == s && (s != domain.JobCompleted || j.FinishedAt != nil) {
				return true
			}
		}
		return false
	}
}

func results(t *testing.T, st *store.Store, jobID string) map[string]store.Result {
	t.Helper()
	rs, err := st.ListResults(context.Background(), jobID, "", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Result{}
	for _, r := range rs {
		out[r.Ref] = r
	}
	return out
}

func TestMemberSyncJobEndToEnd(t *testing.T) {
	t.Parallel()
	pb := newPlatformBundle(t, platformOptions{})
	ctx := context.Background()
	ann := pb.connect(t, "acme", "m-ann", "Ann", "Lee")
	pb.connect(t, "acme", "m-bob", "Bob", "Roe")
	pb.connect(t, "acme", "m-cat", "Cat", "Kim")
	pb.connect(t, "beta", "m-dan", "Dan", "Fox")
	if ann.Status != store.MemberActive || ann.Name != "Ann Lee" || ann.Token.ExpiresAt == nil || ann.Token.Refreshable {
		t.Fatalf("connected member %+v", ann)
	}
	served := pb.fp.ProfilesServed()

	job := pb.submit(t, platform.SyncRequest{Name: "reps", All: true})
	if job.TotalRows != 3 || job.ChunkCount != 2 {
		t.Fatalf("job %+v", job)
	}
	job, counts := pb.wait(t, job.ID, inState(domain.JobCompleted))
	if counts[domain.RowMatched] != 3 {
		t.Fatalf("rows %v", counts)
	}
	if got := pb.fp.ProfilesServed() - served; got != 3 {
		t.Errorf("the platform served %d profiles for 3 members", got)
	}
	res := results(t, pb.Store, job.ID)
	if r := res["m-ann"]; r.Kind != domain.InputMember || r.Profile == nil || r.Profile.Name != "Ann Lee" || r.Profile.Headline != "Ann's headline" {
		t.Errorf("ann's result %+v %+v", r, r.Profile)
	}
	stored, err := pb.Store.StoredProfiles(ctx, job.ID)
	if err != nil || len(stored) != 3 {
		t.Errorf("stored profiles: %+v %v", stored, err)
	}
	for _, sp := range stored {
		if sp.Source != "platform" || !strings.Contains(string(sp.Raw), "x_fake_served_at") {
			t.Errorf("stored profile of row %d: source %q, raw %s", sp.RowID, sp.Source, sp.Raw)
		}
	}
	if pb.Vendor.TotalCharged() != 0 {
		t.Error("a member sync reached the vendor")
	}
	if m, _ := pb.Store.GetPlatformMember(ctx, "acme", ann.ID); m.LastSyncedAt == nil || !m.LastSyncedAt.Equal(pb.clock.Now()) {
		t.Errorf("ann's last sync: %v", m.LastSyncedAt)
	}
	// The token is encrypted at rest.
	stAnn, err := pb.Store.GetPlatformMember(ctx, "acme", ann.ID)
	if sealed := stAnn.Token.Sealed; err != nil || len(sealed) == 0 ||
		bytes.Contains(sealed, []byte("AQ")) || bytes.Contains(sealed, []byte("access_token")) {
		t.Errorf("the stored token is not sealed: %q %v", sealed, err)
	}

	// Only the tenant's own members.
	if _, _, err := pb.p.SubmitSync(ctx, platform.SyncRequest{Tenant: "acme", Members: []string{"m-dan"}}); !errors.As(err, new(*store.UnknownMembersError)) {
		t.Errorf("another tenant's member: %v", err)
	}
}

func TestMemberSyncErrorClasses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("401 marks the member needs_reauth; the job goes on", func(t *testing.T) {
		t.Parallel()
		pb := newPlatformBundle(t, platformOptions{})
		pb.connect(t, "acme", "m-ann", "Ann", "Lee")
		bob := pb.connect(t, "acme", "m-bob", "Bob", "Roe")
		pb.connect(t, "acme", "m-cat", "Cat", "Kim")
		pb.fp.Revoke("m-bob")
		job := pb.submit(t, platform.SyncRequest{All: true})
		_, counts := pb.wait(t, job.ID, inState(domain.JobCompleted))
		if counts[domain.RowMatched] != 2 || counts[domain.RowFailed] != 1 {
			t.Fatalf("rows %v", counts)
		}
		r := results(t, pb.Store, job.ID)["m-bob"]
		if !strings.Contains(r.StateReason, "reconnect") || !strings.Contains(r.StateReason, "expired or was revoked") {
			t.Errorf("bob's reason %q", r.StateReason)
		}
		if m, _ := pb.Store.GetPlatformMember(ctx, "acme", bob.ID); m.Status != store.MemberNeedsReauth {
			t.Errorf("bob is %s", m.Status)
		}
		// The next sync fails bob at once, without a call.
		before := pb.fp.Requests(platformtest.PathMe)
		job = pb.submit(t, platform.SyncRequest{Members: []string{bob.ID}})
		if _, counts := pb.wait(t, job.ID, inState(domain.JobCompleted)); counts[domain.RowFailed] != 1 {
			t.Errorf("second sync of bob: %v", counts)
		}
		if pb.fp.Requests(platformtest.PathMe) != before {
			t.Error("a member who needs to reconnect was called")
		}
		// Reconnecting makes bob syncable again.
		pb.connect(t, "acme", "m-bob", "Bob", "Roe")
		job = pb.submit(t, platform.SyncRequest{Members: []string{"m-bob"}})
		if _, counts := pb.wait(t, job.ID, inState(domain.JobCompleted)); counts[domain.RowMatched] != 1 {
			t.Errorf("sync after reconnect: %v", counts)
		}
	})

	t.Run("403 fails the row with the scope", func(t *testing.T) {
		t.Parallel()
		pb := newPlatformBundle(t, platformOptions{})
		pb.connect(t, "acme", "m-ann", "Ann", "Lee")
		pb.connect(t, "acme", "m-bob", "Bob", "Roe")
		pb.fp.DropScope("m-ann", "profile")
		job := pb.submit(t, platform.SyncRequest{All: true})
		_, counts := pb.wait(t, job.ID, inState(domain.JobCompleted))
		if counts[domain.RowMatched] != 1 || counts[domain.RowFailed] != 1 {
			t.Fatalf("rows %v", counts)
		}
		if r := results(t, pb.Store, job.ID)["m-ann"]; !strings.Contains(r.StateReason, "scope not held") {
			t.Errorf("ann's reason %q", r.StateReason)
		}
	})

	t.Run("426 pauses the job; a newer version resumes it", func(t *testing.T) {
		t.Parallel()
		pb := newPlatformBundle(t, platformOptions{})
		pb.connect(t, "acme", "m-ann", "Ann", "Lee")
		pb.connect(t, "acme", "m-bob", "Bob", "Roe")
		pb.connect(t, "acme", "m-cat", "Cat", "Kim")
		pb.fp.Retire("202611")
		job := pb.submit(t, platform.SyncRequest{All: true})
		// Paused, and the chunk that hit the 426 has put its rows back.
		job, counts := pb.wait(t, job.ID, func(j store.Job, c map[domain.RowState]int) bool {
			return inState(domain.JobPaused)(j, c) && c[domain.RowInFlight] == 0
		})
		if job.StateReason != "platform version 202611 is retired; set a newer one" {
			t.Errorf("reason %q", job.StateReason)
		}
		if counts[domain.RowPending] != 3 {
			t.Errorf("rows %v: a retired version must leave every row to do", counts)
		}
		// Never retried: the paused job gets no more calls.
		calls := pb.fp.Requests(platformtest.PathMe)
		for range 5 {
			pb.sweep(t)
		}
		if got := pb.fp.Requests(platformtest.PathMe); got != calls {
			t.Errorf("%d calls after the pause", got-calls)
		}
		// The operator sets a newer version: a worker built with it finishes the job.
		newer := newPlatformBundleOn(t, pb, "202612")
		if err := newer.p.ResumeSync(ctx, job.ID); err != nil {
			t.Fatal(err)
		}
		if _, counts := newer.wait(t, job.ID, inState(domain.JobCompleted)); counts[domain.RowMatched] != 3 {
			t.Errorf("after resume: %v", counts)
		}
	})

	t.Run("400 pauses the job naming the version header", func(t *testing.T) {
		t.Parallel()
		pb := newPlatformBundle(t, platformOptions{})
		pb.connect(t, "acme", "m-ann", "Ann", "Lee")
		broken := newPlatformBundleOn(t, pb, "", stripHeader{"Platform-Version"})
		job := broken.submit(t, platform.SyncRequest{All: true})
		job, _ = broken.wait(t, job.ID, inState(domain.JobPaused))
		if job.StateReason != "request rejected; check that Platform-Version is set" {
			t.Errorf("reason %q", job.StateReason)
		}
	})

	t.Run("5xx is retried with backoff", func(t *testing.T) {
		t.Parallel()
		pb := newPlatformBundle(t, platformOptions{})
		pb.connect(t, "acme", "m-ann", "Ann", "Lee")
		pb.fp.FailNext(503, 503)
		job := pb.submit(t, platform.SyncRequest{All: true})
		// The retry is due on the shared fake clock: move it along while waiting.
		_, counts := pb.wait(t, job.ID, func(j store.Job, c map[domain.RowState]int) bool {
			pb.clock.Advance(time.Second)
			return inState(domain.JobCompleted)(j, c)
		})
		if counts[domain.RowMatched] != 1 {
			t.Fatalf("rows %v", counts)
		}
		if r := results(t, pb.Store, job.ID)["m-ann"]; r.Attempts != 2 || !strings.Contains(r.LastError, "503") {
			t.Errorf("attempts %d, last error %q", r.Attempts, r.LastError)
		}
	})

	t.Run("an expired token is loud: no call, needs_reauth", func(t *testing.T) {
		t.Parallel()
		pb := newPlatformBundle(t, platformOptions{fake: func(o *platformtest.Options) { o.AccessTokenTTL = time.Hour }})
		ann := pb.connect(t, "acme", "m-ann", "Ann", "Lee")
		pb.clock.Advance(2 * time.Hour)
		calls := pb.fp.Requests(platformtest.PathMe)
		job := pb.submit(t, platform.SyncRequest{All: true})
		if _, counts := pb.wait(t, job.ID, inState(domain.JobCompleted)); counts[domain.RowFailed] != 1 {
			t.Fatalf("rows %v", counts)
		}
		if pb.fp.Requests(platformtest.PathMe) != calls {
			t.Error("an expired token was sent")
		}
		if m, _ := pb.Store.GetPlatformMember(ctx, "acme", ann.ID); m.Status != store.MemberNeedsReauth {
			t.Errorf("ann is %s", m.Status)
		}
	})

	t.Run("a 401 on a refreshable token gets one refresh and one more try", func(t *testing.T) {
		t.Parallel()
		pb := newPlatformBundle(t, platformOptions{fake: func(o *platformtest.Options) { o.RefreshTokenTTL = 365 * 24 * time.Hour }})
		ann := pb.connect(t, "acme", "m-ann", "Ann", "Lee")
		pb.fp.ExpireAccess("m-ann")
		job := pb.submit(t, platform.SyncRequest{All: true})
		if _, counts := pb.wait(t, job.ID, inState(domain.JobCompleted)); counts[domain.RowMatched] != 1 {
			t.Fatalf("rows %v", counts)
		}
		if m, _ := pb.Store.GetPlatformMember(ctx, "acme", ann.ID); m.RefreshedAt == nil || m.Status != store.MemberActive {
			t.Errorf("after the refresh: %+v", m)
		}
	})

	t.Run("an expired token with a refresh token is refreshed", func(t *testing.T) {
		t.Parallel()
		pb := newPlatformBundle(t, platformOptions{fake: func(o *platformtest.Options) {
			o.AccessTokenTTL, o.RefreshTokenTTL = time.Hour, 365*24*time.Hour
		}})
		ann := pb.connect(t, "acme", "m-ann", "Ann", "Lee")
		pb.clock.Advance(2 * time.Hour)
		job := pb.submit(t, platform.SyncRequest{All: true})
		if _, counts := pb.wait(t, job.ID, inState(domain.JobCompleted)); counts[domain.RowMatched] != 1 {
			t.Fatalf("rows %v", counts)
		}
		m, _ := pb.Store.GetPlatformMember(ctx, "acme", ann.ID)
		if m.RefreshedAt == nil || !m.Token.ExpiresAt.After(pb.clock.Now()) || m.Status != store.MemberActive {
			t.Errorf("after refresh: %+v", m)
		}
	})
}

// stripHeader drops a request header, to make the platform answer what it
// answers a client that forgot it.
type stripHeader struct{ name string }

func (s stripHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Del(s.name)
	return http.DefaultTransport.RoundTrip(r)
}

// newPlatformBundleOn starts another worker on pb's store, queue and fake,
// with a client of another version or transport (a redeployed worker).
func newPlatformBundleOn(t *testing.T, pb *platformBundle, version string, transport ...http.RoundTripper) *platformBundle {
	t.Helper()
	if version == "" {
		version = "202611"
	}
	var rt http.RoundTripper
	if len(transport) > 0 {
		rt = transport[0]
	}
	client, err := platformapi.NewClient(platformapi.Config{BaseURL: pb.fsrv.URL, Version: version, HTTPClient: &http.Client{Timeout: 5 * time.Second, Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	oauth, _ := platformapi.NewOAuth(platformapi.OAuthConfig{AuthURL: pb.fsrv.URL + platformtest.PathAuthorize,
		TokenURL: pb.fsrv.URL + platformtest.PathToken, ClientID: "test-client", ClientSecret: "test-secret", RedirectURL: redirectURL})
	log := slog.New(slog.NewTextHandler(pb.logs, nil))
	// A queue of its own, so that pb's workers (the old version) get no task of it.
	enq := jobs.NewEnqueuer(pb.RedisOpt, jobstest.RandomName("test-"))
	t.Cleanup(func() { _ = enq.Inspector.DeleteQueue(enq.Queue, true); enq.Close() })
	p2, err := platform.New(pb.Store, enq, platform.Config{Client: client, OAuth: oauth, Box: pb.box, ChunkSize: 2,
		Recheck: 200 * time.Millisecond, Now: pb.clock.Now}, log)
	if err != nil {
		t.Fatal(err)
	}
	srv := jobs.NewServer(pb.RedisOpt, jobs.ServerConfig{Queue: enq.Queue, Concurrency: 4, ShutdownTimeout: 5 * time.Second,
		TaskCheckInterval: 20 * time.Millisecond, DelayedTaskCheckInterval: 50 * time.Millisecond}, log)
	mux := asynq.NewServeMux()
	mux.HandleFunc(platform.TypeSync, p2.HandleSync)
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	sw := platformMaintainer(pb.Store, enq, p2, log)
	return &platformBundle{Bundle: pb.Bundle, fp: pb.fp, fsrv: pb.fsrv, clock: pb.clock, box: pb.box, p: p2, sweeper: sw, logs: pb.logs}
}

func TestQuotaParksRowsUntilMidnightUTC(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Jitter with Rand 0.5: 1s + 2m30s after midnight.
	const jitter = time.Second + 150*time.Second

	t.Run("a 429 at 23:59:50 is retried just after 00:00", func(t *testing.T) {
		t.Parallel()
		pb := newPlatformBundle(t, platformOptions{start: time.Date(2026, 11, 20, 23, 59, 40, 0, time.UTC),
			fake: func(o *platformtest.Options) { o.MemberDailyQuota = 1 }})
		pb.connect(t, "acme", "m-ann", "Ann", "Lee") // reads /rest/me once: the member's quota for the day
		pb.clock.Set(time.Date(2026, 11, 20, 23, 59, 50, 0, time.UTC))
		job := pb.submit(t, platform.SyncRequest{All: true})
		job, _ = pb.wait(t, job.ID, func(_ store.Job, c map[domain.RowState]int) bool { return c[domain.RowRetryWait] == 1 })
		next, err := pb.Store.NextAttempt(ctx, job.ID)
		want := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC).Add(jitter)
		if err != nil || next == nil || !next.Equal(want) {
			t.Fatalf("parked until %v, want %v (%v)", next, want, err)
		}
		r := results(t, pb.Store, job.ID)["m-ann"]
		if r.Attempts != 0 || !strings.Contains(r.LastError, "daily quota") {
			t.Errorf("a parked row: attempts %d, last error %q", r.Attempts, r.LastError)
		}
		if !strings.Contains(pb.logs.String(), "rows parked until after midnight UTC") {
			t.Error("parking was not logged")
		}
		// Not before midnight: sweeps at 23:59:59 call nothing.
		calls := pb.fp.Requests(platformtest.PathMe)
		pb.clock.Set(time.Date(2026, 11, 20, 23, 59, 59, 0, time.UTC))
		for range 3 {
			pb.sweep(t)
		}
		if pb.fp.Requests(platformtest.PathMe) != calls {
			t.Fatal("the parked row was retried before midnight")
		}
		pb.clock.Set(*next)
		job, counts := pb.wait(t, job.ID, inState(domain.JobCompleted))
		if counts[domain.RowMatched] != 1 {
			t.Fatalf("rows %v", counts)
		}
		stored, err := pb.Store.StoredProfiles(ctx, job.ID)
		if err != nil || len(stored) != 1 || stored[0].FetchedAt.Sub(time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)) > 5*time.Minute {
			t.Errorf("stored %+v (%v), want fetched just after 00:00 UTC", stored, err)
		}
	})

	t.Run("a 429 at 00:00:10 waits a full day", func(t *testing.T) {
		t.Parallel()
		pb := newPlatformBundle(t, platformOptions{start: time.Date(2026, 11, 21, 0, 0, 5, 0, time.UTC),
			fake: func(o *platformtest.Options) { o.AppDailyQuota = 1 }})
		pb.connect(t, "acme", "m-ann", "Ann", "Lee") // the app's quota for the day
		pb.clock.Set(time.Date(2026, 11, 21, 0, 0, 10, 0, time.UTC))
		job := pb.submit(t, platform.SyncRequest{All: true})
		job, _ = pb.wait(t, job.ID, func(_ store.Job, c map[domain.RowState]int) bool { return c[domain.RowRetryWait] == 1 })
		next, _ := pb.Store.NextAttempt(ctx, job.ID)
		want := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC).Add(jitter)
		if next == nil || !next.Equal(want) {
			t.Fatalf("parked until %v, want %v", next, want)
		}
		// Later the same day: still waiting, nothing called.
		calls := pb.fp.Requests(platformtest.PathMe)
		pb.clock.Set(time.Date(2026, 11, 21, 23, 59, 0, 0, time.UTC))
		for range 3 {
			pb.sweep(t)
		}
		if c, _ := pb.Store.RowCounts(ctx, job.ID); c[domain.RowRetryWait] != 1 || pb.fp.Requests(platformtest.PathMe) != calls {
			t.Fatalf("before the next midnight: rows %v, %d calls", c, pb.fp.Requests(platformtest.PathMe)-calls)
		}
		pb.clock.Set(*next)
		if _, counts := pb.wait(t, job.ID, inState(domain.JobCompleted)); counts[domain.RowMatched] != 1 {
			t.Fatalf("rows %v", counts)
		}
	})
}

func TestTokenExpiryMadeLoud(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pb := newPlatformBundle(t, platformOptions{noWorker: true})
	day := 24 * time.Hour
	pb.fp.SetTokenTTL(3*day, 0)
	ann := pb.connect(t, "acme", "m-ann", "Ann", "Lee") // 3 days, no refresh token: reported
	pb.fp.SetTokenTTL(3*day, 365*day)
	bob := pb.connect(t, "acme", "m-bob", "Bob", "Roe") // 3 days with a refresh token: refreshed
	pb.fp.SetTokenTTL(day, 0)
	cat := pb.connect(t, "acme", "m-cat", "Cat", "Kim") // 1 day, no refresh token: expires
	pb.fp.SetTokenTTL(60*day, 0)
	dan := pb.connect(t, "acme", "m-dan", "Dan", "Fox") // 60 days: nothing to say
	pb.fp.SetTokenTTL(3*day, 365*day)                   // what a refresh gets

	st, err := pb.p.SweepTokens(ctx)
	if err != nil || st.Warned != 2 || st.Refreshed != 0 || st.Expired != 0 {
		t.Fatalf("first sweep: %+v %v", st, err)
	}
	logs := pb.logs.String()
	for _, m := range []store.PlatformMember{ann, cat} {
		if !strings.Contains(logs, "platform token expires soon") || !strings.Contains(logs, "member="+m.ID) {
			t.Errorf("no expiry warning for %s in the logs:\n%s", m.MemberID, logs)
		}
	}
	if st, _ := pb.p.SweepTokens(ctx); st.Warned != 0 {
		t.Errorf("warned again at once: %+v", st)
	}
	ending, _ := pb.Store.ListPlatformMembers(ctx, "acme", store.MemberFilter{EndingBefore: ptrTime(pb.clock.Now().Add(pb.p.ExpiryWindow()))})
	if len(ending) != 2 {
		t.Errorf("members ending within 7d: %d", len(ending))
	}

	pb.clock.Advance(2 * day)
	st, err = pb.p.SweepTokens(ctx)
	if err != nil || st.Refreshed != 1 || st.Expired != 1 {
		t.Fatalf("two days later: %+v %v", st, err)
	}
	m, _ := pb.Store.GetPlatformMember(ctx, "acme", bob.ID)
	if m.RefreshedAt == nil || !m.Token.ExpiresAt.Equal(pb.clock.Now().Add(3*day)) || m.Status != store.MemberActive {
		t.Errorf("bob after the sweep: %+v", m)
	}
	if m, _ := pb.Store.GetPlatformMember(ctx, "acme", cat.ID); m.Status != store.MemberNeedsReauth || !strings.Contains(m.StatusReason, "token expired") {
		t.Errorf("cat after expiry: %s %q", m.Status, m.StatusReason)
	}
	if m, _ := pb.Store.GetPlatformMember(ctx, "acme", dan.ID); m.Status != store.MemberActive || m.RefreshedAt != nil {
		t.Errorf("dan: %+v", m)
	}
	if !strings.Contains(pb.logs.String(), "platform member needs to reconnect: token expired") {
		t.Error("the expiry was not logged")
	}
	// A refused refresh marks the member needs_reauth.
	pb.fp.Revoke("m-bob")
	pb.clock.Advance(2 * day)
	if _, err := pb.p.SweepTokens(ctx); err != nil {
		t.Fatal(err)
	}
	if m, _ := pb.Store.GetPlatformMember(ctx, "acme", bob.ID); m.Status != store.MemberNeedsReauth || !strings.Contains(m.StatusReason, "refresh refused") {
		t.Errorf("bob after a refused refresh: %s %q", m.Status, m.StatusReason)
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// A token refresh holds no transaction of the store open while the
// platform answers: the token endpoint looks at pg_stat_activity as it does.
func TestTokenRefreshHoldsNoTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var pb *platformBundle
	var mu sync.Mutex
	var held []int
	pb = newPlatformBundle(t, platformOptions{noWorker: true, token: func(fake http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := r.ParseForm(); err == nil && r.PostForm.Get("grant_type") == "refresh_token" {
				n := storetest.IdleTransactions(t, pb.Store)
				mu.Lock()
				held = append(held, n)
				mu.Unlock()
			}
			fake.ServeHTTP(w, r)
		})
	}})
	day := 24 * time.Hour
	pb.fp.SetTokenTTL(3*day, 365*day)
	bob := pb.connect(t, "acme", "m-bob", "Bob", "Roe")
	pb.clock.Advance(2 * day)
	st, err := pb.p.SweepTokens(ctx)
	if err != nil || st.Refreshed != 1 {
		t.Fatalf("sweep: %+v %v", st, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(held) != 1 || held[0] != 0 {
		t.Fatalf("transactions open while the token endpoint answered: %v, want one refresh seeing none", held)
	}
	if m, _ := pb.Store.GetPlatformMember(ctx, "acme", bob.ID); m.RefreshedAt == nil || m.Status != store.MemberActive {
		t.Errorf("bob after the refresh: %+v", m)
	}
}

func TestConnectFlowRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pb := newPlatformBundle(t, platformOptions{noWorker: true})
	pb.fp.AddMember(platformtest.Member{ID: "m-ann", FirstName: "Ann"})

	// A forged state: refused before any exchange.
	tokens := pb.fp.Requests(platformtest.PathToken)
	cb := pb.consent(t, "acme", "m-ann")
	if _, err := pb.p.CompleteConnect(ctx, platform.Callback{State: "forged-" + cb.State, Code: cb.Code}); !errors.Is(err, platform.ErrConnectState) {
		t.Errorf("forged state: %v", err)
	}
	if pb.fp.Requests(platformtest.PathToken) != tokens {
		t.Error("a forged state reached the token endpoint")
	}
	// The real one works once.
	if _, err := pb.p.CompleteConnect(ctx, cb); err != nil {
		t.Fatal(err)
	}
	if _, err := pb.p.CompleteConnect(ctx, cb); !errors.Is(err, platform.ErrConnectState) {
		t.Errorf("replayed state: %v", err)
	}
	// PKCE: a code obtained for one request, brought back with another
	// request's state, is refused by the platform (the verifiers differ).
	first, second := pb.consent(t, "acme", "m-ann"), pb.consent(t, "acme", "m-ann")
	_, err := pb.p.CompleteConnect(ctx, platform.Callback{State: second.State, Code: first.Code})
	var ce *platform.ConnectError
	if !errors.As(err, &ce) || ce.Code != "code_refused" || !strings.Contains(ce.Message, "PKCE") {
		t.Errorf("swapped code: %v", err)
	}
	// An expired state.
	late := pb.consent(t, "acme", "m-ann")
	pb.clock.Advance(11 * time.Minute)
	if _, err := pb.p.CompleteConnect(ctx, late); !errors.Is(err, platform.ErrConnectState) {
		t.Errorf("expired state: %v", err)
	}
	// Declined consent.
	pb.fp.Deny(true)
	declined := pb.consent(t, "acme", "m-ann")
	if _, err := pb.p.CompleteConnect(ctx, declined); !errors.As(err, &ce) || ce.Code != "consent_declined" {
		t.Errorf("declined: %v", err)
	}
	pb.fp.Deny(false)
	// A member who withheld the profile scope: connect fails naming it.
	pb.fp.WithholdScopes("profile")
	if _, err := pb.p.CompleteConnect(ctx, pb.consent(t, "acme", "m-ann")); !errors.As(err, &ce) || !strings.Contains(ce.Message, "scope not held") {
		t.Errorf("without the profile scope: %v", err)
	}
}

func TestSyncGuardRefusesColdLookups(t *testing.T) {
	t.Parallel()
	pb := newPlatformBundle(t, platformOptions{noWorker: true})
	pb.connect(t, "acme", "m-ann", "Ann", "Lee")
	before := pb.fp.Requests("")
	_, _, err := pb.p.SubmitSync(context.Background(), platform.SyncRequest{Tenant: "acme", Members: []string{"m-ann", "https://platform.example/in/jane-doe"}})
	if !errors.Is(err, platformapi.ErrColdLookup) || !strings.Contains(err.Error(), "Cold lookups go to the vendor") {
		t.Fatalf("cold lookup: %v", err)
	}
	if pb.fp.Requests("") != before {
		t.Error("a cold lookup reached the platform")
	}
	jobsList, _ := pb.Store.ListJobs(context.Background(), "acme", nil, 10)
	if len(jobsList) != 0 {
		t.Error("a refused sync stored a job")
	}
}

// A resumed member sync runs at once: the resume hands its chunks to the
// queue itself, with no scheduler step.
func TestResumeSyncDispatchesAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pb := newPlatformBundle(t, platformOptions{})
	pb.connect(t, "acme", "m-ann", "Ann", "Lee")
	pb.connect(t, "acme", "m-bob", "Bob", "Roe")
	pb.connect(t, "acme", "m-cat", "Cat", "Kim")
	pb.fp.Retire("202611")
	job := pb.submit(t, platform.SyncRequest{All: true})
	job, _ = pb.wait(t, job.ID, func(j store.Job, c map[domain.RowState]int) bool {
		return inState(domain.JobPaused)(j, c) && c[domain.RowInFlight] == 0
	})
	newer := newPlatformBundleOn(t, pb, "202612")
	if err := newer.p.ResumeSync(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		job, err := pb.Store.JobByID(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if job.State == domain.JobCompleted {
			break
		}
		if time.Now().After(deadline) {
			counts, _ := pb.Store.RowCounts(ctx, job.ID)
			t.Fatalf("resumed job still %s (%s), rows %v: nothing ran without a scheduler step", job.State, job.StateReason, counts)
		}
		time.Sleep(20 * time.Millisecond) // polling real asynq workers
	}
	if counts, _ := pb.Store.RowCounts(ctx, job.ID); counts[domain.RowMatched] != 3 {
		t.Errorf("rows %v", counts)
	}
}

// Each periodic service does its work once per step.
func TestPeriodicSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pb := newPlatformBundle(t, platformOptions{noWorker: true, recheck: time.Hour})
	day := 24 * time.Hour
	pb.fp.SetTokenTTL(3*day, 0)
	pb.connect(t, "acme", "m-ann", "Ann", "Lee") // ends within the expiry window: warned
	pb.fp.SetTokenTTL(60*day, 0)
	pb.connect(t, "acme", "m-bob", "Bob", "Roe")
	pb.connect(t, "acme", "m-cat", "Cat", "Kim")

	dispatcher := platform.NewSyncDispatcher(pb.p, 0)
	if dispatcher.Name() != "platform_sync_dispatcher" || dispatcher.Interval() != platform.DefaultStepInterval {
		t.Errorf("dispatcher %q every %s", dispatcher.Name(), dispatcher.Interval())
	}
	if d := platform.NewSyncDispatcher(pb.p, time.Second); d.Interval() != time.Second {
		t.Errorf("interval %s, want 1s", d.Interval())
	}
	// A sync stored without its first enqueue (the API's enqueue failed).
	job, _, err := pb.Store.CreatePlatformSync(ctx, store.NewPlatformSync{Tenant: "acme", All: true, ChunkSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := dispatcher.Step(ctx); err != nil || n != 2 {
		t.Fatalf("dispatch: %d chunks (%v), want 2", n, err)
	}
	for c := range 2 {
		info, err := pb.Enqueuer.Inspector.GetTaskInfo(pb.Queue, platform.SyncTaskID(store.ChunkRef{JobID: job.ID, Chunk: c}))
		if err != nil || info.Type != platform.TypeSync {
			t.Errorf("chunk %d in the queue: %+v %v", c, info, err)
		}
	}
	if n, err := dispatcher.Step(ctx); err != nil || n != 0 {
		t.Errorf("dispatch again within the recheck: %d (%v)", n, err)
	}

	sweeper := platform.NewTokenSweeper(pb.p, 0)
	if sweeper.Name() != "platform_token_sweeper" || sweeper.Interval() != platform.DefaultStepInterval {
		t.Errorf("sweeper %q every %s", sweeper.Name(), sweeper.Interval())
	}
	if _, err := pb.p.ConnectURL(ctx, "acme"); err != nil { // a connect request nobody finishes
		t.Fatal(err)
	}
	pb.clock.Advance(11 * time.Minute)
	if n, err := sweeper.Step(ctx); err != nil || n != 1 {
		t.Errorf("token step: %d (%v), want ann warned", n, err)
	}
	if n, err := pb.Store.DeleteExpiredConnectStates(ctx, pb.clock.Now()); err != nil || n != 0 {
		t.Errorf("expired connect requests left by the step: %d (%v)", n, err)
	}
	if n, err := sweeper.Step(ctx); err != nil || n != 0 {
		t.Errorf("token step again: %d (%v), want nothing (warned once per day)", n, err)
	}
}
