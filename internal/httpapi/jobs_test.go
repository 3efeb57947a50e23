package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

const oneRow = "profile_url\nhttps://platform.example/in/a\n"

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := b.mustCreate(t, keyA, "", oneRow)
	routes := []struct{ method, path string }{
		{http.MethodPost, "/v1/jobs"},
		{http.MethodGet, "/v1/jobs"},
		{http.MethodGet, "/v1/jobs/" + job.ID},
		{http.MethodGet, "/v1/jobs/" + job.ID + "/results"},
		{http.MethodPost, "/v1/jobs/" + job.ID + "/cancel"},
	}
	for _, rt := range routes {
		for _, auth := range []string{"", "Bearer", "Bearer not-a-key-0000", "Basic " + keyA, keyA} {
			var header []string
			if auth != "" {
				header = []string{"Authorization", auth}
			}
			resp, data := b.call(t, rt.method, rt.path, "", strings.NewReader(oneRow), append(header, "Content-Type", "text/csv")...)
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s with %q: %d %v", rt.method, rt.path, auth, resp.StatusCode, resp.Header)
				continue
			}
			if e := apiErr(t, data); e.Code != "unauthorized" {
				t.Errorf("%s %s: %+v", rt.method, rt.path, e)
			}
		}
	}
	if jobsN, _ := b.counts(t); jobsN != 1 {
		t.Fatalf("%d jobs; unauthenticated submits stored jobs", jobsN)
	}
	// The scheme is case-insensitive.
	if resp, data := b.call(t, http.MethodGet, "/v1/jobs/"+job.ID, "", nil, "Authorization", "bearer "+keyA); resp.StatusCode != http.StatusOK {
		t.Fatalf("lower-case scheme: %d %s", resp.StatusCode, data)
	}
	// The log names the route and tenant, never a key.
	logs := b.logs.String()
	if strings.Contains(logs, keyA) || strings.Contains(logs, "not-a-key-0000") {
		t.Fatalf("a key is in the log:\n%s", logs)
	}
	if !strings.Contains(logs, `"route":"GET /v1/jobs/{id}"`) || !strings.Contains(logs, `"tenant":"acme"`) || !strings.Contains(logs, `"status":401`) {
		t.Fatalf("request log lacks route, tenant or status:\n%s", logs)
	}
}

func TestOtherTenantsJobIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := b.mustCreate(t, keyA, "", oneRow)
	for _, id := range []string{job.ID, "00000000-0000-0000-0000-000000000000", "not-a-uuid"} {
		for _, rt := range []struct{ method, path string }{
			{http.MethodGet, "/v1/jobs/" + id},
			{http.MethodGet, "/v1/jobs/" + id + "/results"},
			{http.MethodGet, "/v1/jobs/" + id + "/results?format=csv"},
			{http.MethodPost, "/v1/jobs/" + id + "/cancel"},
		} {
			resp, data := b.call(t, rt.method, rt.path, keyB, nil)
			if resp.StatusCode != http.StatusNotFound || apiErr(t, data).Code != "not_found" {
				t.Errorf("%s %s as tenant B: %d %s", rt.method, rt.path, resp.StatusCode, data)
			}
		}
	}
	if got, _ := b.Store.JobByID(context.Background(), job.ID); got.State != domain.JobQueued {
		t.Fatalf("tenant B's cancel changed the job: %s", got.State)
	}
}

func TestListJobsPaginates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for i := range 3 {
		ids = append(ids, b.mustCreate(t, keyA, "name=job"+string(rune('1'+i)), oneRow).ID)
	}
	b.mustCreate(t, keyB, "", oneRow) // not in tenant A's list

	resp, data := b.call(t, http.MethodGet, "/v1/jobs?limit=2", keyA, nil)
	page := decode[jobList](t, data)
	if resp.StatusCode != http.StatusOK || len(page.Jobs) != 2 || page.NextCursor == nil {
		t.Fatalf("page 1: %d %s", resp.StatusCode, data)
	}
	if page.Jobs[0].ID != ids[2] || page.Jobs[1].ID != ids[1] || page.Jobs[0].Rows.Total != 1 || page.Jobs[0].Rows.Pending != 1 {
		t.Fatalf("page 1 = %+v, want jobs 3 and 2 (newest first)", page.Jobs)
	}
	resp, data = b.call(t, http.MethodGet, "/v1/jobs?limit=2&cursor="+url.QueryEscape(*page.NextCursor), keyA, nil)
	page = decode[jobList](t, data)
	if resp.StatusCode != http.StatusOK || len(page.Jobs) != 1 || page.Jobs[0].ID != ids[0] || page.NextCursor != nil {
		t.Fatalf("page 2: %d %s", resp.StatusCode, data)
	}
	if raw := decode[map[string]any](t, data); raw["next_cursor"] != nil {
		t.Fatalf("next_cursor = %v, want null", raw["next_cursor"])
	}
	// Default and the maximum limits; another tenant's list. (Over the maximum is a 400.)
	for _, q := range []string{"", "?limit=200"} {
		if _, data := b.call(t, http.MethodGet, "/v1/jobs"+q, keyA, nil); len(decode[jobList](t, data).Jobs) != 3 {
			t.Fatalf("list%s: %s", q, data)
		}
	}
	if _, data := b.call(t, http.MethodGet, "/v1/jobs", keyB, nil); len(decode[jobList](t, data).Jobs) != 1 {
		t.Fatalf("tenant B: %s", data)
	}
	// Bad parameters are 400s naming the parameter.
	for q, param := range map[string]string{"limit=0": "limit", "limit=ten": "limit", "limit=201": "limit", "cursor=%21%21": "cursor", "cursor=eA": "cursor"} {
		resp, data := b.call(t, http.MethodGet, "/v1/jobs?"+q, keyA, nil)
		e := apiErr(t, data)
		if resp.StatusCode != http.StatusBadRequest || len(e.Details) != 1 || e.Details[0].Column != param {
			t.Errorf("?%s: %d %s", q, resp.StatusCode, data)
		}
	}
}

func TestGetJobProgressAndETA(t *testing.T) {
	t.Parallel()
	started := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	b := setup(t, func(d *deps) { d.Now = func() time.Time { return started.Add(100 * time.Second) } })
	job := b.mustCreate(t, keyA, "", "profile_url\nhttps://platform.example/in/a\nhttps://platform.example/in/b\nhttps://platform.example/in/c\nhttps://platform.example/in/d\n")
	finishRows(t, b.Store, tenantA, job.ID, func(i int, r store.Row) store.Outcome {
		switch i {
		case 0:
			return store.Outcome{State: domain.RowNoMatch, NoMatches: []domain.Stage{domain.StageProfile}, StagesDone: []domain.Stage{domain.StageProfile}}
		case 1:
			return store.Outcome{State: domain.RowRetryWait, NextAttemptAt: time.Now().Add(time.Hour), LastError: "429"}
		default:
			return store.Outcome{State: domain.RowInFlight, StagesDone: nil}
		}
	})
	storetest.StartJobAt(t, b.Store, job.ID, started)
	resp, data := b.call(t, http.MethodGet, "/v1/jobs/"+job.ID, keyA, nil)
	st := decode[jobStatus](t, data)
	want := rowCounts{Total: 4, InFlight: 2, RetryWait: 1, NoMatch: 1}
	if resp.StatusCode != http.StatusOK || st.Rows != want || st.State != domain.JobRunning {
		t.Fatalf("GET: %d %s", resp.StatusCode, data)
	}
	// One row done in 100 s, three to go: 300 s.
	if st.Progress != 0.25 || st.ETASeconds == nil || *st.ETASeconds != 300 || st.StartedAt == nil || !st.StartedAt.Equal(started) {
		t.Fatalf("progress %v eta %v started %v", st.Progress, st.ETASeconds, st.StartedAt)
	}
}

func ptr[T any](v T) *T { return &v }

func TestCancelJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := b.mustCreate(t, keyA, "", "profile_url\nhttps://platform.example/in/a\nhttps://platform.example/in/b\n")
	for range 2 { // canceling twice is harmless
		resp, data := b.call(t, http.MethodPost, "/v1/jobs/"+job.ID+"/cancel", keyA, nil)
		st := decode[jobStatus](t, data)
		if resp.StatusCode != http.StatusOK || st.State != domain.JobCanceled || st.Rows.Skipped != 2 || st.Rows.Pending != 0 ||
			st.StateReason == "" || st.FinishedAt == nil || st.Progress != 1 {
			t.Fatalf("cancel: %d %s", resp.StatusCode, data)
		}
	}
	// A finished job cannot be canceled.
	done := b.mustCreate(t, keyA, "", oneRow)
	finishRows(t, b.Store, tenantA, done.ID, func(int, store.Row) store.Outcome {
		return store.Outcome{State: domain.RowNoMatch, NoMatches: []domain.Stage{domain.StageProfile}, StagesDone: []domain.Stage{domain.StageProfile}}
	})
	if _, err := b.Store.FinishJobs(context.Background(), done.ID); err != nil {
		t.Fatal(err)
	}
	resp, data := b.call(t, http.MethodPost, "/v1/jobs/"+done.ID+"/cancel", keyA, nil)
	if e := apiErr(t, data); resp.StatusCode != http.StatusConflict || e.Code != "job_finished" || !strings.Contains(e.Message, "completed") {
		t.Fatalf("cancel a completed job: %d %s", resp.StatusCode, data)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	var notReady atomic.Pointer[string]
	b := setup(t, func(d *deps) {
		d.Ready = []ReadyCheck{{Name: "postgres", Ping: func(context.Context) error { return nil }},
			{Name: "redis", Ping: func(ctx context.Context) error {
				if msg := notReady.Load(); msg != nil {
					return errors.New(*msg)
				}
				return nil
			}}}
	})
	resp, data := b.call(t, http.MethodGet, "/healthz", "", nil)
	if resp.StatusCode != http.StatusOK || string(data) != "ok\n" {
		t.Fatalf("healthz: %d %q", resp.StatusCode, data)
	}
	resp, data = b.call(t, http.MethodGet, "/readyz", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz: %d %q", resp.StatusCode, data)
	}
	// The driver's error names addresses: logged, never answered.
	notReady.Store(ptr("dial tcp 10.1.2.3:6379: connection refused"))
	resp, data = b.call(t, http.MethodGet, "/readyz", "", nil)
	if resp.StatusCode != http.StatusServiceUnavailable || string(data) != "not ready: redis unavailable\n" {
		t.Fatalf("readyz when not ready: %d %q", resp.StatusCode, data)
	}
	if !strings.Contains(b.logs.String(), "10.1.2.3:6379") {
		t.Fatalf("the cause is not logged: %s", b.logs.String())
	}
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{http.MethodGet, "/nope", 404, "not_found", ""},
		{http.MethodGet, "/v1/jobs/x/y/z", 404, "not_found", ""},
		{http.MethodDelete, "/v1/jobs", 405, "method_not_allowed", "GET, HEAD, POST"},
		{http.MethodGet, "/v1/jobs/x/cancel", 405, "method_not_allowed", "POST"},
		{http.MethodPost, "/healthz", 405, "method_not_allowed", "GET, HEAD"},
	} {
		resp, data := b.call(t, c.method, c.path, keyA, nil)
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/json" || apiErr(t, data).Code != c.code ||
			resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d %v %s", c.method, c.path, resp.StatusCode, resp.Header, data)
		}
	}
}

func TestPanicIsA500(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	s := &server{Deps: Deps{Log: slogTo(logs)}}
	h := s.logRequests(s.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if rec.Code != http.StatusInternalServerError || apiErr(t, rec.Body.Bytes()).Code != "internal" {
		t.Fatalf("panic: %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "boom") || !strings.Contains(logs.String(), `"status":500`) {
		t.Fatalf("log: %s", logs)
	}
}

// While Postgres is out of reach (a restart, a failover) the API says 503
// with Retry-After, not 500: the client's retry will work.
func TestDatabaseOutageIs503(t *testing.T) {
	t.Parallel()
	down := storetest.Unreachable(t)
	b := setup(t, func(d *deps) {
		d.svc.Store = down
		d.svc.Submitter.Store = down
	})
	for _, c := range []struct {
		method, path, body string
	}{
		{http.MethodGet, "/v1/jobs/00000000-0000-0000-0000-000000000001", ""},
		{http.MethodGet, "/v1/jobs", ""},
		{http.MethodPost, "/v1/jobs", `{"rows":[{"profile_url":"https://platform.example/in/a"}]}`},
	} {
		var body io.Reader
		header := []string{}
		if c.body != "" {
			body = strings.NewReader(c.body)
			header = append(header, "Content-Type", "application/json")
		}
		resp, data := b.call(t, c.method, c.path, keyA, body, header...)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || apiErr(t, data).Code != "unavailable" {
			t.Errorf("%s %s with the database down: %d Retry-After=%q %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Retry-After"), data)
		}
	}
}

// With a status cache, polls within its TTL are served from memory (one
// read of Postgres for many polls), a poll after it sees the job as it is,
// and a cancel through the API is seen at once.
func TestStatusCache(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	b := setup(t, func(d *deps) {
		d.Now = func() time.Time { return time.Unix(0, now.Load()) }
		d.svc.StatusCacheTTL = time.Second
	})
	job := b.mustCreate(t, keyA, "", "profile_url\nhttps://platform.example/in/a\nhttps://platform.example/in/b\n")
	poll := func() jobStatus { t.Helper(); return poll2(t, b, job.ID) }
	if st := poll(); st.Rows.Pending != 2 {
		t.Fatalf("first poll: %+v", st.Rows)
	}
	finishRows(t, b.Store, tenantA, job.ID, func(i int, r store.Row) store.Outcome {
		return store.Outcome{State: domain.RowNoMatch, NoMatches: []domain.Stage{domain.StageProfile}, StagesDone: []domain.Stage{domain.StageProfile}}
	})
	if st := poll(); st.Rows.Pending != 2 || st.Rows.NoMatch != 0 {
		t.Fatalf("a poll within the TTL read Postgres: %+v", st.Rows)
	}
	// Another tenant never gets the entry.
	if resp, _ := b.call(t, http.MethodGet, "/v1/jobs/"+job.ID, keyB, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("other tenant: %d", resp.StatusCode)
	}
	now.Add(int64(time.Second))
	if st := poll(); st.Rows.NoMatch != 2 {
		t.Fatalf("a poll after the TTL: %+v", st.Rows)
	}

	job2 := b.mustCreate(t, keyA, "", "profile_url\nhttps://platform.example/in/c\n")
	if st := poll2(t, b, job2.ID); st.State != domain.JobQueued {
		t.Fatalf("job 2: %s", st.State)
	}
	if resp, data := b.call(t, http.MethodPost, "/v1/jobs/"+job2.ID+"/cancel", keyA, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.StatusCode, data)
	}
	if st := poll2(t, b, job2.ID); st.State != domain.JobCanceled {
		t.Fatalf("after a cancel, within the TTL: %s", st.State)
	}
}

func poll2(t *testing.T, b *bundle, id string) jobStatus {
	t.Helper()
	resp, data := b.call(t, http.MethodGet, "/v1/jobs/"+id, keyA, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d %s", resp.StatusCode, data)
	}
	return decode[jobStatus](t, data)
}
