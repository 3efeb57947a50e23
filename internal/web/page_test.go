package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/apitest"
	"github.com/enrichq/enrichq/internal/ingest/ingesttest"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store/storetest"
	"github.com/enrichq/enrichq/internal/web"
)

// The page's rules, checked over HTTP: sessions, CSRF, headers, tenancy,
// scopes and the upload's errors. browser_test.go drives the same page in
// a real browser.
func TestPage(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{}, false)

	// A job of each tenant, through the API.
	submit := func(key string) string {
		resp, body := s.call(t, http.MethodPost, "/v1/jobs?roles=CTO", key, "text/csv", strings.NewReader(apitest.CompaniesCSV(3)))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("submit: %s %s", resp.Status, body)
		}
		var st struct{ ID string }
		_ = json.Unmarshal(body, &st)
		return st.ID
	}
	jobA, jobB := submit(keyA), submit(keyB)

	t.Run("SignInAndOut", func(t *testing.T) {
		t.Parallel()
		p := s.person(t)
		resp, body := p.get("/")
		if resp.Request.URL.Path != "/ui/signin" || !strings.Contains(body, `type="password"`) {
			t.Fatalf("/ signed out: %s at %s", resp.Status, resp.Request.URL.Path)
		}
		// A wrong key is refused, and says so.
		resp, body = p.post("/ui/signin", url.Values{"csrf": {csrf(t, body)}, "key": {"not-a-key"}})
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "not known") {
			t.Fatalf("wrong key: %s\n%.400s", resp.Status, body)
		}
		// The right key: a session cookie, HttpOnly and SameSite=Strict, and no key in it.
		_, body = p.get("/ui/signin")
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/ui/signin", strings.NewReader(url.Values{"csrf": {csrf(t, body)}, "key": {keyA}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for _, c := range p.client.Jar.Cookies(req.URL) {
			req.AddCookie(c)
		}
		resp, err := (&http.Transport{}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var session *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == "enrichq_session" {
				session = c
			}
		}
		if resp.StatusCode != http.StatusSeeOther || session == nil {
			t.Fatalf("sign in: %s, cookies %v", resp.Status, resp.Cookies())
		}
		if !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Secure || session.MaxAge != int(web.DefaultSessionMax.Seconds()) {
			t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure on http, MaxAge 8h", session)
		}
		if strings.Contains(session.Value, keyA) || strings.Contains(resp.Header.Get("Location"), keyA) {
			t.Fatal("the key is in the cookie or the redirect")
		}
		p.client.Jar.SetCookies(req.URL, []*http.Cookie{session})
		resp, body = p.get("/ui/jobs")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, jobA) || strings.Contains(body, jobB) {
			t.Fatalf("jobs page: %s; has A's job %v, B's %v", resp.Status, strings.Contains(body, jobA), strings.Contains(body, jobB))
		}
		// Sign out ends the session on the server: the old cookie opens nothing.
		resp, _ = p.post("/ui/signout", url.Values{"csrf": {csrf(t, body)}})
		if resp.Request.URL.Path != "/ui/signin" {
			t.Fatalf("sign out: at %s", resp.Request.URL.Path)
		}
		old := s.person(t)
		old.client.Jar.SetCookies(req.URL, []*http.Cookie{session})
		if resp, _ := old.get("/ui/jobs"); resp.Request.URL.Path != "/ui/signin" {
			t.Fatalf("the signed-out cookie still opens %s", resp.Request.URL.Path)
		}
	})

	t.Run("SecureCookieBehindTLS", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/ui/signin", nil)
		req.Header.Set("X-Forwarded-Proto", "https")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if c := resp.Cookies(); len(c) != 1 || !c[0].Secure || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
			t.Fatalf("sign-in cookie behind TLS: %+v", c)
		}
	})

	t.Run("Headers", func(t *testing.T) {
		t.Parallel()
		p := s.person(t)
		p.signIn(keyA)
		for _, path := range []string{"/ui/signin", "/ui/jobs", "/ui/jobs/new", "/ui/jobs/" + jobA, "/ui/members"} {
			resp, body := p.get(path)
			csp := resp.Header.Get("Content-Security-Policy")
			if resp.StatusCode != http.StatusOK || !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
				strings.Contains(csp, "unsafe-inline") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s: %s, CSP %q", path, resp.Status, csp)
			}
			// No inline script: every script is a file of this server.
			if strings.Contains(body, "<script>") || strings.Contains(body, " onclick=") || strings.Contains(body, "style=") {
				t.Errorf("%s has inline script or style", path)
			}
		}
	})

	t.Run("IdleSessionEnds", func(t *testing.T) {
		// Not parallel: it moves the page's clock.
		p := s.person(t)
		p.signIn(keyA)
		s.clock.Advance(web.DefaultSessionIdle - time.Minute)
		if resp, _ := p.get("/ui/jobs"); resp.Request.URL.Path != "/ui/jobs" {
			t.Fatalf("used within the hour: at %s", resp.Request.URL.Path)
		}
		s.clock.Advance(web.DefaultSessionIdle + time.Minute)
		if resp, _ := p.get("/ui/jobs"); resp.Request.URL.Path != "/ui/signin" {
			t.Fatalf("idle for over an hour: at %s, want the sign-in page", resp.Request.URL.Path)
		}
	})

	t.Run("FormsNeedCSRF", func(t *testing.T) {
		t.Parallel()
		p := s.person(t)
		body := p.signIn(keyA)
		token := csrf(t, body)
		// A job its budget of 0 holds paused (companies of its own: no cached
		// answer is free to it): its budget can still change (a finished
		// job's cannot, below).
		resp, created := s.call(t, http.MethodPost, "/v1/jobs?roles=CTO&budget_credits=0", keyA, "text/csv",
			strings.NewReader("company\nHeld Back Ltd\nKept Waiting plc\n"))
		var held struct{ ID string }
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(created, &held) != nil {
			t.Fatalf("submit: %s %s", resp.Status, created)
		}
		jobA := held.ID
		for _, form := range []url.Values{{}, {"csrf": {"forged"}}, {"csrf": {token + "x"}}} {
			form.Set("budget_credits", "1")
			resp, body := p.post("/ui/jobs/"+jobA+"/budget", form)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "not sent from this site") {
				t.Fatalf("budget form with csrf %q: %s", form.Get("csrf"), resp.Status)
			}
		}
		// Sign-in too: a form of another site cannot sign a person in.
		if resp, _ := s.person(t).post("/ui/signin", url.Values{"key": {keyA}}); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("sign in without the form's token: %s", resp.Status)
		}
		if resp, st := s.call(t, http.MethodGet, "/v1/jobs/"+jobA, keyA, "", nil); resp.StatusCode != http.StatusOK || strings.Contains(string(st), `"budget":1,`) {
			t.Fatalf("the budget changed: %s", st)
		}
		// With the session's token the same form works.
		if resp, _ := p.post("/ui/jobs/"+jobA+"/budget", url.Values{"csrf": {token}, "budget_credits": {"777"}}); resp.StatusCode != http.StatusOK {
			t.Fatalf("budget form with the token: %s", resp.Status)
		}
		if _, body := s.call(t, http.MethodGet, "/v1/jobs/"+jobA, keyA, "", nil); !strings.Contains(string(body), `"budget":777`) {
			t.Fatalf("the budget did not change: %s", body)
		}
		// A finished job's budget cannot change: the page says why, as the API
		// does (409). Canceled now, or completed already on its raised budget.
		if resp, _ := p.post("/ui/jobs/"+jobA+"/cancel", url.Values{"csrf": {token}}); resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
			t.Fatalf("cancel: %s", resp.Status)
		}
		if resp, body := p.post("/ui/jobs/"+jobA+"/budget", url.Values{"csrf": {token}, "budget_credits": {"900"}}); resp.StatusCode != http.StatusConflict ||
			!strings.Contains(body, "the job is already") {
			t.Fatalf("budget form of a finished job: %s", resp.Status)
		}
	})

	t.Run("AnotherTenantsJobIsNotFound", func(t *testing.T) {
		t.Parallel()
		p := s.person(t)
		token := csrf(t, p.signIn(keyA))
		for _, path := range []string{"/ui/jobs/" + jobB, "/ui/jobs/" + jobB + "/status", "/ui/jobs/" + jobB + "/results?format=csv",
			"/ui/jobs/00000000-0000-0000-0000-000000000000", "/ui/jobs/not-a-uuid"} {
			resp, body := p.get(path)
			if resp.StatusCode != http.StatusNotFound || (!strings.HasSuffix(path, "/status") && !strings.Contains(body, "Not found")) {
				t.Errorf("GET %s as another tenant: %s\n%.300s", path, resp.Status, body)
			}
		}
		for _, path := range []string{"/cancel", "/budget", "/resume"} {
			resp, _ := p.post("/ui/jobs/"+jobB+path, url.Values{"csrf": {token}, "budget_credits": {"5"}})
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("POST %s of another tenant's job: %s", path, resp.Status)
			}
		}
		if _, body := s.call(t, http.MethodGet, "/v1/jobs/"+jobB, keyB, "", nil); strings.Contains(string(body), `"canceled"`) || strings.Contains(string(body), `"budget":5,`) {
			t.Fatalf("tenant B's job changed: %s", body)
		}
	})

	t.Run("PlatformNotConfigured", func(t *testing.T) {
		t.Parallel()
		p := s.person(t)
		p.signIn(keyA)
		if resp, body := p.get("/ui/members"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="not-configured"`) {
			t.Fatalf("members without a platform: %s\n%.400s", resp.Status, body)
		}
		if resp, body := p.get("/ui/members/connect"); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("connect without a platform: %s\n%.400s", resp.Status, body)
		}
	})

	t.Run("EveryFormat", func(t *testing.T) {
		t.Parallel()
		p := s.person(t)
		p.signIn(keyA)
		rows := [][]any{{"ref", "company"}, {"r1", "Acme AG"}, {"r2", "Beta GmbH"}, {"r3", "Gamma SA"}}
		files := map[string][]byte{
			"list.csv":  []byte("ref,company\nr1,Acme AG\nr2,Beta GmbH\nr3,Gamma SA\n"),
			"list.tsv":  []byte("ref\tcompany\nr1\tAcme AG\nr2\tBeta GmbH\nr3\tGamma SA\n"),
			"list.json": []byte(`{"rows": [{"ref": "r1", "company": "Acme AG"}, {"ref": "r2", "company": "Beta GmbH"}, {"ref": "r3", "company": "Gamma SA"}]}`),
			"list.xlsx": ingesttest.XLSX(t, rows),
		}
		for name, data := range files {
			resp, body := p.upload(name, data, url.Values{"roles": {"CTO, VP Sales"}, "lookups": {"profile"}, "budget_credits": {"50"}})
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<dd id="est-rows">6 `) || !strings.Contains(body, `id="confirm-amount">12 credits<`) {
				t.Errorf("%s: %s\n%.3000s", name, resp.Status, body)
			}
		}
		resp, body := p.upload("list.pdf", []byte("%PDF-1.4"), url.Values{"lookups": {"profile"}})
		if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(body, ".csv, .tsv, .xlsx or .json") {
			t.Errorf("a PDF: %s", resp.Status)
		}
	})

	t.Run("ReadOnlyKey", func(t *testing.T) {
		t.Parallel()
		p := s.person(t)
		p.signIn(keyRead)
		resp, body := p.get("/ui/jobs/new")
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "submit") {
			t.Fatalf("new job with a read key: %s\n%.300s", resp.Status, body)
		}
	})

	t.Run("UploadErrorsNameRowAndColumn", func(t *testing.T) {
		// Not parallel: it counts the uploads left, and it runs before
		// the parallel subtests that upload.
		const bad = "ref,name,company\nr1,Jane Doe,Acme\nr2,John Roe,\nr3,,Beta AG\n"
		// What the API says of the same file.
		resp, apiBody := s.call(t, http.MethodPost, "/v1/uploads", keyA, "text/csv", strings.NewReader(bad))
		var apiErr struct {
			Error struct {
				Details []struct {
					Row             int
					Column, Message string
				}
			}
		}
		if err := json.Unmarshal(apiBody, &apiErr); err != nil || resp.StatusCode != http.StatusUnprocessableEntity || len(apiErr.Error.Details) == 0 {
			t.Fatalf("API upload: %s %s", resp.Status, apiBody)
		}
		p := s.person(t)
		p.signIn(keyA)
		resp, body := p.upload("bad.csv", []byte(bad), url.Values{"lookups": {"profile"}})
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("bad upload: %s\n%.500s", resp.Status, body)
		}
		for _, d := range apiErr.Error.Details {
			row := "<td class=\"num\">" + strconv.Itoa(d.Row) + "</td><td>" + d.Column + "</td>"
			if !strings.Contains(body, row) {
				t.Errorf("the page does not name row %d, column %q (%s):\n%s", d.Row, d.Column, d.Message, body)
			}
		}
		// Companies without roles: the file is good, the estimate is refused,
		// and the file is not kept either.
		resp, body = p.upload("noroles.csv", []byte(apitest.CompaniesCSV(3)), url.Values{"lookups": {"profile"}})
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "role") {
			t.Errorf("companies without roles: %s\n%.1500s", resp.Status, body)
		}
		if n := storetest.Uploads(t, s.Store); n != 0 {
			t.Errorf("refused files left %d uploads", n)
		}
	})
}

// upload sends the new-job form with a file and fields, as the page does:
// the CSRF token, the file, then the fields.
func (p *person) upload(filename string, data []byte, fields url.Values) (*http.Response, string) {
	p.t.Helper()
	_, page := p.get("/ui/jobs/new")
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("csrf", csrf(p.t, page))
	fw, _ := mw.CreateFormFile("file", filename)
	_, _ = fw.Write(data)
	for k, vs := range fields {
		for _, v := range vs {
			_ = mw.WriteField(k, v)
		}
	}
	_ = mw.Close()
	return p.postMultipart("/ui/jobs/new", mw.FormDataContentType(), &form)
}

// postMultipart posts a multipart body and returns the answer (after
// redirects) and its body.
func (p *person) postMultipart(path, contentType string, body io.Reader) (*http.Response, string) {
	p.t.Helper()
	resp, err := p.client.Post(p.s.URL+path, contentType, body)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp, out.String()
}

// Cancel from the job's page: the job is canceled and the page says so;
// Resume of a job that is not paused says why not.
func TestCancelFromPage(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true}, false) // the job waits: nothing works on it
	resp, body := s.call(t, http.MethodPost, "/v1/jobs?roles=CTO", keyA, "text/csv", strings.NewReader(apitest.CompaniesCSV(5)))
	var st struct{ ID string }
	if err := json.Unmarshal(body, &st); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %s %s", resp.Status, body)
	}
	p := s.person(t)
	p.signIn(keyA)
	_, page := p.get("/ui/jobs/" + st.ID)
	if !strings.Contains(page, `id="cancel"`) || !strings.Contains(page, "Waiting to start") {
		t.Fatalf("a queued job's page:\n%.2000s", page)
	}
	resp, page = p.post("/ui/jobs/"+st.ID+"/resume", url.Values{"csrf": {csrf(t, page)}})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(page, "not paused") {
		t.Fatalf("resume a queued job: %s\n%.600s", resp.Status, page)
	}
	_, page = p.get("/ui/jobs/" + st.ID)
	resp, page = p.post("/ui/jobs/"+st.ID+"/cancel", url.Values{"csrf": {csrf(t, page)}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "The job is canceled") || !strings.Contains(page, ">Canceled<") ||
		strings.Contains(page, `id="cancel"`) {
		t.Fatalf("cancel: %s\n%.2000s", resp.Status, page)
	}
	if _, body := s.call(t, http.MethodGet, "/v1/jobs/"+st.ID, keyA, "", nil); !strings.Contains(string(body), `"state":"canceled"`) {
		t.Fatalf("the API after cancel: %s", body)
	}
}
