package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/platform"
	"github.com/enrichq/enrichq/internal/platform/platformapi"
	"github.com/enrichq/enrichq/internal/platform/platformtest"
	"github.com/enrichq/enrichq/internal/secretbox"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// platformBundle is the API with the platform's routes on, against the fake
// platform over HTTP, on a fake clock shared with the fake.
type platformBundle struct {
	*bundle
	fp    *platformtest.Platform
	p     *platform.Platform
	clock *platformtest.Clock
}

func platformSetup(t *testing.T, fake func(*platformtest.Options)) *platformBundle {
	t.Helper()
	clock := platformtest.NewClock(time.Date(2026, 11, 20, 23, 59, 40, 0, time.UTC))
	fopts := platformtest.DefaultOptions()
	fopts.Now = clock.Now
	if fake != nil {
		fake(&fopts)
	}
	fp := platformtest.New(fopts)
	fsrv := httptest.NewServer(fp)
	t.Cleanup(fsrv.Close)
	client, err := platformapi.NewClient(platformapi.Config{BaseURL: fsrv.URL, Version: "202611"})
	if err != nil {
		t.Fatal(err)
	}
	var oauth *oauth2.Config
	oauth, err = platformapi.NewOAuth(platformapi.OAuthConfig{AuthURL: fsrv.URL + platformtest.PathAuthorize,
		TokenURL: fsrv.URL + platformtest.PathToken, ClientID: fopts.ClientID, ClientSecret: fopts.ClientSecret,
		RedirectURL: "http://placeholder/v1/platform/callback"})
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, secretbox.KeySize)
	_, _ = rand.Read(key)
	box, _ := secretbox.New(key)
	var p *platform.Platform
	b := setup(t, func(d *deps) {
		d.Now = clock.Now
		p, err = platform.New(d.svc.Store, nil, platform.Config{Client: client, OAuth: oauth, Box: box,
			Now: clock.Now, Rand: func() float64 { return 0 }}, d.Log)
		if err != nil {
			t.Fatal(err)
		}
		d.svc.Platform = p
	})
	oauth.RedirectURL = b.srv.URL + "/v1/platform/callback" // known once the server listens
	return &platformBundle{bundle: b, fp: fp, p: p, clock: clock}
}

// noFollow is a client that shows redirects instead of following them.
var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, u, key string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp, buf.Bytes()
}

// consent starts a connect flow as tenant key and passes the consent screen
// signed in as member; it returns the callback URL the platform sends the
// browser to.
func (pb *platformBundle) consent(t *testing.T, key, member string) *url.URL {
	t.Helper()
	pb.fp.SignIn(member)
	resp, body := get(t, pb.srv.URL+"/v1/platform/connect", key)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("connect: %s %s", resp.Status, body)
	}
	authz, _ := url.Parse(resp.Header.Get("Location"))
	if decode[connectJSON](t, body).AuthorizeURL != authz.String() {
		t.Errorf("authorize_url in the body differs from Location")
	}
	q := authz.Query()
	if q.Get("state") == "" || q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" ||
		q.Get("scope") != "openid profile email" || q.Get("redirect_uri") != pb.srv.URL+"/v1/platform/callback" || q.Get("response_type") != "code" {
		t.Fatalf("consent screen URL: %s", authz)
	}
	resp, body = get(t, authz.String(), "")
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("consent screen: %s %s", resp.Status, body)
	}
	cb, _ := url.Parse(resp.Header.Get("Location"))
	if cb.Query().Get("state") != q.Get("state") {
		t.Fatalf("the platform sent back another state")
	}
	return cb
}

func (pb *platformBundle) connect(t *testing.T, key, id, name string) memberJSON {
	t.Helper()
	pb.fp.AddMember(platformtest.Member{ID: id, FirstName: name, LastName: "Doe", Email: strings.ToLower(name) + "@example.com"})
	resp, body := get(t, pb.consent(t, key, id).String(), "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("callback: %s %s", resp.Status, body)
	}
	c := decode[connectedJSON](t, body)
	if !c.Connected || c.Member.MemberID != id {
		t.Fatalf("callback body %s", body)
	}
	return c.Member
}

func TestPlatformConnectFlowEndToEnd(t *testing.T) {
	t.Parallel()
	pb := platformSetup(t, nil)

	m := pb.connect(t, keyA, "m-ann", "Ann")
	if m.Name != "Ann Doe" || m.Status != service.MemberActive || m.TokenExpiresAt == nil || m.ExpiresInSeconds == nil ||
		strings.Join(m.Scopes, " ") != "openid profile email" || m.Email != "ann@example.com" {
		t.Errorf("member %+v", m)
	}
	// The token is stored encrypted; the state and verifier are used up.
	sealed := storetest.SealedMemberToken(t, pb.Store, m.ID)
	states := storetest.ConnectStates(t, pb.Store)
	if bytes.Contains(sealed, []byte("AQ")) || bytes.Contains(sealed, []byte("access_token")) || states != 0 {
		t.Errorf("token stored as %q, %d connect states left", sealed, states)
	}
	// Members are the tenant's own.
	resp, body := pb.call(t, http.MethodGet, "/v1/platform/members", keyA, nil)
	if list := decode[memberList](t, body); resp.StatusCode != 200 || len(list.Members) != 1 || list.Members[0].ID != m.ID {
		t.Errorf("members of A: %s %s", resp.Status, body)
	}
	if _, body := pb.call(t, http.MethodGet, "/v1/platform/members", keyB, nil); len(decode[memberList](t, body).Members) != 0 {
		t.Errorf("members of B: %s", body)
	}
	if resp, _ := pb.call(t, http.MethodGet, "/v1/platform/members/"+m.ID, keyB, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("A's member as B: %s", resp.Status)
	}
	if resp, body := pb.call(t, http.MethodGet, "/v1/platform/profile?member="+m.ID, keyA, nil); resp.StatusCode != 200 ||
		!strings.Contains(string(body), `"localizedFirstName":"Ann"`) {
		t.Errorf("profile: %s %s", resp.Status, body)
	}
	if strings.Contains(pb.logs.String(), "AQ") {
		t.Error("a token is in the logs")
	}

	// A forged state is refused before any exchange.
	tokens := pb.fp.Requests(platformtest.PathToken)
	cb := pb.consent(t, keyA, "m-ann")
	forged := *cb
	q := forged.Query()
	q.Set("state", "forged-state-0123456789")
	forged.RawQuery = q.Encode()
	resp, body = get(t, forged.String(), "")
	if resp.StatusCode != http.StatusBadRequest || apiErr(t, body).Code != "invalid_state" {
		t.Errorf("forged state: %s %s", resp.Status, body)
	}
	if pb.fp.Requests(platformtest.PathToken) != tokens {
		t.Error("a forged state reached the token endpoint")
	}
	// The genuine callback works once; a replay is refused.
	if resp, body := get(t, cb.String(), ""); resp.StatusCode != http.StatusOK {
		t.Errorf("genuine callback: %s %s", resp.Status, body)
	}
	if resp, body := get(t, cb.String(), ""); resp.StatusCode != http.StatusBadRequest || apiErr(t, body).Code != "invalid_state" {
		t.Errorf("replayed callback: %s %s", resp.Status, body)
	}
	// PKCE: the code of one flow with the state of another is refused by the platform.
	first, second := pb.consent(t, keyA, "m-ann"), pb.consent(t, keyA, "m-ann")
	swapped := *second
	q = swapped.Query()
	q.Set("code", first.Query().Get("code"))
	swapped.RawQuery = q.Encode()
	resp, body = get(t, swapped.String(), "")
	if e := apiErr(t, body); resp.StatusCode != http.StatusBadRequest || e.Code != "code_refused" || !strings.Contains(e.Message, "PKCE") {
		t.Errorf("swapped code: %s %s", resp.Status, body)
	}
	// A state of tenant A cannot connect a member to tenant B: the state names the tenant.
	if _, body := pb.call(t, http.MethodGet, "/v1/platform/members", keyB, nil); len(decode[memberList](t, body).Members) != 0 {
		t.Errorf("B got a member: %s", body)
	}
	// Declined consent.
	pb.fp.Deny(true)
	resp, body = get(t, pb.consent(t, keyA, "m-ann").String(), "")
	if resp.StatusCode != http.StatusBadRequest || apiErr(t, body).Code != "consent_declined" {
		t.Errorf("declined: %s %s", resp.Status, body)
	}
	// The connect route wants a key.
	if resp, _ := get(t, pb.srv.URL+"/v1/platform/connect", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("connect without a key: %s", resp.Status)
	}
}

func TestPlatformSyncOverHTTP(t *testing.T) {
	t.Parallel()
	pb := platformSetup(t, func(o *platformtest.Options) { o.MemberDailyQuota = 1 })
	ctx := context.Background()
	ann := pb.connect(t, keyA, "m-ann", "Ann") // /rest/me once: the member's quota today
	pb.connect(t, keyA, "m-bob", "Bob")

	// A key of POST /v1/jobs is not a key of member syncs: the sync is made, not the job replayed.
	resp, body := pb.call(t, http.MethodPost, "/v1/jobs", keyA, strings.NewReader(`{"rows": [{"email": "kim@acme.example"}]}`),
		"Content-Type", "application/json", "Idempotency-Key", "sync-1")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("job: %s %s", resp.Status, body)
	}
	job := decode[jobStatus](t, body)
	resp, body = pb.call(t, http.MethodPost, "/v1/platform/sync", keyA, strings.NewReader(`{"name": "reps", "members": "all"}`),
		"Content-Type", "application/json", "Idempotency-Key", "sync-1")
	if resp.StatusCode != http.StatusCreated || decode[syncStatus](t, body).ID == job.ID {
		t.Fatalf("sync: %s %s", resp.Status, body)
	}
	st := decode[syncStatus](t, body)
	if st.Rows.Total != 2 || st.State != domain.JobQueued || resp.Header.Get("Location") != "/v1/platform/sync/"+st.ID {
		t.Fatalf("status %s, Location %q", body, resp.Header.Get("Location"))
	}
	resp, body = pb.call(t, http.MethodPost, "/v1/platform/sync", keyA, strings.NewReader(`{"name": "reps", "members": "all"}`),
		"Content-Type", "application/json", "Idempotency-Key", "sync-1")
	if resp.StatusCode != http.StatusOK || decode[syncStatus](t, body).ID != st.ID || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %s %s", resp.Status, body)
	}
	// The same key with other members: refused, the first sync stays the key's.
	resp, body = pb.call(t, http.MethodPost, "/v1/platform/sync", keyA, strings.NewReader(`{"members": [`+"\""+ann.ID+`"]}`),
		"Content-Type", "application/json", "Idempotency-Key", "sync-1")
	if resp.StatusCode != http.StatusUnprocessableEntity || apiErr(t, body).Code != "idempotency_key_reused" {
		t.Errorf("other members under the key: %s %s", resp.Status, body)
	}
	// The job's key still answers its job, the sync under the same key beside it.
	resp, body = pb.call(t, http.MethodPost, "/v1/jobs", keyA, strings.NewReader(`{"rows": [{"email": "kim@acme.example"}]}`),
		"Content-Type", "application/json", "Idempotency-Key", "sync-1")
	if resp.StatusCode != http.StatusOK || decode[jobStatus](t, body).ID != job.ID {
		t.Errorf("the job's key again: %s %s", resp.Status, body)
	}

	// The worker's turn at 23:59:50 UTC: both members are over their daily quota.
	pb.clock.Set(time.Date(2026, 11, 20, 23, 59, 50, 0, time.UTC))
	if _, err := pb.p.ProcessSync(ctx, store.ChunkRef{JobID: st.ID}); err != nil {
		t.Fatal(err)
	}
	_, body = pb.call(t, http.MethodGet, "/v1/platform/sync/"+st.ID, keyA, nil)
	st = decode[syncStatus](t, body)
	want := time.Date(2026, 11, 21, 0, 0, 1, 0, time.UTC) // midnight UTC plus the jitter's floor
	if st.State != domain.JobRunning || st.Rows.RetryWait != 2 || st.NextAttemptAt == nil || !st.NextAttemptAt.Equal(want) {
		t.Fatalf("after the 429s: %s", body)
	}
	// Just after midnight the quotas are back.
	pb.clock.Set(want)
	if _, err := pb.p.ProcessSync(ctx, store.ChunkRef{JobID: st.ID}); err != nil {
		t.Fatal(err)
	}
	_, body = pb.call(t, http.MethodGet, "/v1/platform/sync/"+st.ID, keyA, nil)
	if st = decode[syncStatus](t, body); st.State != domain.JobCompleted || st.Rows.Matched != 2 || st.NextAttemptAt != nil {
		t.Fatalf("after midnight: %s", body)
	}
	// Results through the ordinary results route.
	resp, body = pb.call(t, http.MethodGet, "/v1/jobs/"+st.ID+"/results?format=json", keyA, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"full_name":"Ann Doe"`) {
		t.Errorf("results: %s %s", resp.Status, body)
	}

	// Other tenants and other jobs.
	if resp, _ := pb.call(t, http.MethodGet, "/v1/platform/sync/"+st.ID, keyB, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("A's sync as B: %s", resp.Status)
	}
	vendorJob := pb.mustCreate(t, keyA, "", "profile_url\nhttps://platform.example/in/x\n")
	if resp, _ := pb.call(t, http.MethodGet, "/v1/platform/sync/"+vendorJob.ID, keyA, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a vendor job as a member sync: %s", resp.Status)
	}
	if resp, _ := pb.call(t, http.MethodPost, "/v1/platform/sync/"+st.ID+"/resume", keyA, nil); resp.StatusCode != http.StatusConflict {
		t.Errorf("resume a completed job: %s", resp.Status)
	}

	// A retired version pauses a job; resume puts it back.
	pb.fp.Retire("202611")
	resp, body = pb.call(t, http.MethodPost, "/v1/platform/sync", keyA, strings.NewReader(`{"members": ["m-bob"]}`), "Content-Type", "application/json")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("sync bob: %s %s", resp.Status, body)
	}
	id := decode[syncStatus](t, body).ID
	// The scheduler hands the chunk out (this API has no queue of its own).
	if refs, err := pb.Store.PlatformChunksToEnqueue(ctx, pb.clock.Now(), time.Hour, 100); err != nil || len(refs) != 1 || refs[0].JobID != id {
		t.Fatalf("dispatch of bob's sync: %v %v", refs, err)
	}
	if _, err := pb.p.ProcessSync(ctx, store.ChunkRef{JobID: id}); err != nil {
		t.Fatal(err)
	}
	_, body = pb.call(t, http.MethodGet, "/v1/platform/sync/"+id, keyA, nil)
	if st := decode[syncStatus](t, body); st.State != domain.JobPaused || st.StateReason != "platform version 202611 is retired; set a newer one" {
		t.Errorf("retired: %s", body)
	}
	resp, body = pb.call(t, http.MethodPost, "/v1/platform/sync/"+id+"/resume", keyA, nil)
	if st := decode[syncStatus](t, body); resp.StatusCode != 200 || (st.State != domain.JobRunning && st.State != domain.JobQueued) {
		t.Errorf("resume: %s %s", resp.Status, body)
	}
	// Due at the scheduler's next dispatch, not after the recheck of the hand-out before the pause.
	if refs, err := pb.Store.PlatformChunksToEnqueue(ctx, pb.clock.Now(), time.Hour, 100); err != nil || len(refs) != 1 || refs[0].JobID != id {
		t.Errorf("dispatch after resume: %v %v", refs, err)
	}

	// Bad requests.
	for body, code := range map[string]string{
		`{"members": []}`:              "invalid_members",
		`{}`:                           "invalid_members",
		`{"members": "some"}`:          "invalid_members",
		`{"members": [1, 2]}`:          "invalid_members",
		`{"members": ["m-nobody"]}`:    "unknown_members",
		`{"members": "all", "x": 1}`:   "unknown_field",
		`{"members": ["m-ann"]`:        "invalid_json",
		`{"members": ["m-dan-of-b"]} `: "unknown_members",
	} {
		resp, data := pb.call(t, http.MethodPost, "/v1/platform/sync", keyA, strings.NewReader(body), "Content-Type", "application/json")
		if e := apiErr(t, data); e.Code != code || resp.StatusCode < 400 || resp.StatusCode > 422 {
			t.Errorf("%s: %s %s, want %s", body, resp.Status, data, code)
		}
	}
}

func TestPlatformGuardRefusesColdLookups(t *testing.T) {
	t.Parallel()
	pb := platformSetup(t, nil)
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/platform/sync", `{"profile_urls": ["https://platform.example/in/jane-doe"]}`},
		{http.MethodPost, "/v1/platform/sync", `{"profile_url": "https://platform.example/in/jane-doe"}`},
		{http.MethodPost, "/v1/platform/sync", `{"rows": [{"profile_url": "https://platform.example/in/jane-doe"}]}`},
		{http.MethodPost, "/v1/platform/sync", `{"members": ["https://platform.example/in/jane-doe"]}`},
		{http.MethodPost, "/v1/platform/sync", `{"members": "https://platform.example/in/jane-doe"}`},
		{http.MethodGet, "/v1/platform/profile?profile_url=" + url.QueryEscape("https://platform.example/in/jane-doe"), ""},
		{http.MethodGet, "/v1/platform/profile?member=" + url.QueryEscape("https://platform.example/in/jane-doe"), ""},
	} {
		resp, data := pb.call(t, tc.method, tc.path, keyA, strings.NewReader(tc.body), "Content-Type", "application/json")
		e := apiErr(t, data)
		if resp.StatusCode != http.StatusUnprocessableEntity || e.Code != "cold_lookup_refused" ||
			!strings.Contains(e.Message, "Cold lookups go to the vendor") || !strings.Contains(e.Message, "jane-doe") {
			t.Errorf("%s %s %s: %s %s", tc.method, tc.path, tc.body, resp.Status, data)
		}
	}
	if n := pb.fp.Requests(""); n != 0 {
		t.Errorf("%d requests reached the platform", n)
	}
	if jobsN, rowsN := pb.counts(t); jobsN != 0 || rowsN != 0 {
		t.Errorf("a refused lookup stored %d jobs, %d rows", jobsN, rowsN)
	}
}

func TestPlatformMembersExpiringWithin(t *testing.T) {
	t.Parallel()
	pb := platformSetup(t, nil)
	pb.fp.SetTokenTTL(3*24*time.Hour, 0)
	soon := pb.connect(t, keyA, "m-soon", "Sue")
	pb.fp.SetTokenTTL(60*24*time.Hour, 0)
	pb.connect(t, keyA, "m-late", "Lee")
	for q, n := range map[string]int{"": 2, "?expiring_within=7d": 1, "?expiring_within=48h": 0, "?expiring_within=90d": 2, "?status=needs_reauth": 0} {
		resp, body := pb.call(t, http.MethodGet, "/v1/platform/members"+q, keyA, nil)
		list := decode[memberList](t, body)
		if resp.StatusCode != 200 || len(list.Members) != n {
			t.Errorf("members%s: %s, %d members, want %d", q, resp.Status, len(list.Members), n)
		}
		if q == "?expiring_within=7d" && (list.Members[0].ID != soon.ID || *list.Members[0].ExpiresInSeconds != 3*24*3600) {
			t.Errorf("expiring: %s", body)
		}
	}
	resp, body := pb.call(t, http.MethodGet, "/v1/platform/members?limit=1", keyA, nil)
	page := decode[memberList](t, body)
	if resp.StatusCode != 200 || len(page.Members) != 1 || page.NextCursor == nil {
		t.Fatalf("first page: %s", body)
	}
	_, body = pb.call(t, http.MethodGet, "/v1/platform/members?limit=1&cursor="+*page.NextCursor, keyA, nil)
	if next := decode[memberList](t, body); len(next.Members) != 1 || next.Members[0].ID == page.Members[0].ID || next.NextCursor != nil {
		t.Errorf("second page: %s", body)
	}
	for _, q := range []string{"?expiring_within=soon", "?expiring_within=-1h", "?status=gone", "?cursor=nope"} {
		if resp, body := pb.call(t, http.MethodGet, "/v1/platform/members"+q, keyA, nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("members%s: %s %s", q, resp.Status, body)
		}
	}
}

func TestPlatformNotConfigured(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/v1/platform/members", "/v1/platform/connect"} {
		resp, body := b.call(t, http.MethodGet, path, keyA, nil)
		if resp.StatusCode != http.StatusServiceUnavailable || apiErr(t, body).Code != "platform_not_configured" {
			t.Errorf("%s: %s %s", path, resp.Status, body)
		}
	}
	if resp, body := b.call(t, http.MethodGet, "/v1/platform/callback?state=x&code=y", "", nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("callback: %s %s", resp.Status, body)
	}
	// The guard answers even so: a cold lookup is never the platform's.
	resp, body := b.call(t, http.MethodGet, "/v1/platform/profile?profile_url=https://platform.example/in/x", keyA, nil)
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("guard without the platform: %s %s", resp.Status, body)
	}
}
