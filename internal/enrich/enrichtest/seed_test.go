package enrichtest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/seed"
)

// seedClock is a settable time for SeedOptions.Now.
type seedClock struct {
	mu  sync.Mutex
	now time.Time
}

func newSeedClock() *seedClock { return &seedClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *seedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *seedClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func startSeed(t *testing.T, mutate func(*enrichtest.SeedOptions)) (*enrichtest.Seed, *httptest.Server) {
	t.Helper()
	opts := enrichtest.DefaultSeedOptions()
	opts.APIKeys = []string{"key-a", "key-b"}
	if mutate != nil {
		mutate(&opts)
	}
	v := enrichtest.NewSeed(opts)
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	return v, srv
}

type seedReply struct {
	status int
	header http.Header
	body   string
}

// call makes one raw HTTP request to the fake.
func callSeed(t *testing.T, srv *httptest.Server, method, path, key, idem, body string) seedReply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return seedReply{resp.StatusCode, resp.Header, string(b)}
}

func profilePath(u string) string { return "/v1/profile?profile_url=" + url.QueryEscape(u) }

func errorCode(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("body %q is not a vendor error (%v)", body, err)
	}
	return e.Error.Code
}

func TestRateLimitPastBurst(t *testing.T) {
	t.Parallel()
	clk := newSeedClock()
	v, srv := startSeed(t, func(o *enrichtest.SeedOptions) { o.RPS, o.Burst, o.Now = 2, 3, clk.Now })
	p := profilePath("https://platform.example/in/jane")

	for i := range 3 {
		if r := callSeed(t, srv, "GET", p, "key-a", "", ""); r.status/100 != 2 && r.status != 404 {
			t.Fatalf("call %d within the burst: %d %s", i, r.status, r.body)
		}
	}
	r := callSeed(t, srv, "GET", p, "key-a", "", "")
	if r.status != 429 || r.header.Get("Retry-After") != "1" || errorCode(t, r.body) != "rate_limited" {
		t.Fatalf("past the burst: %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if r.header.Get("X-RateLimit-Limit") != "2" || r.header.Get("X-RateLimit-Remaining") != "0" || r.header.Get("X-RateLimit-Reset") != "2" {
		t.Fatalf("rate-limit headers: %v", r.header)
	}
	if r.header.Get("X-Credits-Charged") != "0" {
		t.Fatalf("a 429 was charged %q", r.header.Get("X-Credits-Charged"))
	}
	// The bucket is per key.
	if r := callSeed(t, srv, "GET", p, "key-b", "", ""); r.status == 429 {
		t.Fatal("key-b limited by key-a's calls")
	}
	// Half a second later, one token is back.
	clk.Advance(500 * time.Millisecond)
	if r := callSeed(t, srv, "GET", p, "key-a", "", ""); r.status == 429 {
		t.Fatal("no token after 500ms at 2 rps")
	}
	if r := callSeed(t, srv, "GET", p, "key-a", "", ""); r.status != 429 {
		t.Fatalf("status %d, want 429", r.status)
	}
	if s := v.Stats(); s.ByStatus[429] != 2 || s.Requests != 7 || s.ByEndpoint["profile"] != 7 {
		t.Fatalf("stats = %+v", s)
	}
	// Lifting the limit at run time.
	v.SetFaults(enrichtest.SeedFaults{})
	if r := callSeed(t, srv, "GET", p, "key-a", "", ""); r.status == 429 {
		t.Fatal("still limited after SetFaults without RPS")
	}
}

func TestDeterministicHits(t *testing.T) {
	t.Parallel()
	a, srvA := startSeed(t, nil)
	b, _ := startSeed(t, func(o *enrichtest.SeedOptions) { o.Seed = 99 })
	var hits int
	for i := range 1000 {
		u := fmt.Sprintf("https://platform.example/in/member-%d", i)
		q := enrich.ProfileQuery{ProfileURL: u}
		if a.ProfileHit(q) != b.ProfileHit(q) || a.EmailHit(u) != b.EmailHit(u) || a.PhoneHit(u) != b.PhoneHit(u) {
			t.Fatalf("%s: hits depend on the seed", u)
		}
		variant := enrich.ProfileQuery{ProfileURL: strings.ToUpper(strings.Replace(u, "https://", "http://www.", 1)) + "/?utm=x"}
		if a.ProfileHit(q) != a.ProfileHit(variant) {
			t.Fatalf("%s: normalised variants differ", u)
		}
		if a.ProfileHit(q) {
			hits++
		}
	}
	if hits < 750 || hits > 850 {
		t.Fatalf("%d hits in 1000 at rate 0.8", hits)
	}
	nc := enrich.ProfileQuery{Name: "VP  Sales", Company: "ACME"}
	if a.ProfileHit(nc) != a.ProfileHit(enrich.ProfileQuery{Name: "vp sales", Company: " acme "}) {
		t.Fatal("name+company normalisation")
	}
	// The HTTP answer agrees with the predicate, and the same input gets the same record.
	for i := range 20 {
		u := fmt.Sprintf("https://platform.example/in/member-%d", i)
		r1 := callSeed(t, srvA, "GET", profilePath(u), "key-a", "", "")
		r2 := callSeed(t, srvA, "GET", profilePath(u), "key-b", "", "")
		if want := a.ProfileHit(enrich.ProfileQuery{ProfileURL: u}); (r1.status == 200) != want || r1.body != r2.body {
			t.Fatalf("%s: status %d (hit %v), bodies equal %v", u, r1.status, want, r1.body == r2.body)
		}
	}
	none := enrichtest.DefaultSeedOptions()
	none.ProfileHitRate = 0
	if enrichtest.NewSeed(none).ProfileHit(enrich.ProfileQuery{ProfileURL: "https://platform.example/in/member-1"}) {
		t.Fatal("hit rate 0 matched")
	}
}

// A hit rate by top-level domain decides for the queries of that domain (or
// email domain), the default rate for the others.
func TestProfileHitRatesByTLD(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultSeedOptions()
	opts.ProfileHitRate = 0.5
	opts.ProfileHitRates = map[string]float64{"fr": 0, "com": 1}
	v := enrichtest.NewSeed(opts)
	other := 0
	for i := range 400 {
		name := fmt.Sprintf("Person %d", i)
		if v.ProfileHit(enrich.ProfileQuery{Name: name, Domain: fmt.Sprintf("acme%d.fr", i)}) {
			t.Fatalf("%s at a .fr domain matched at rate 0", name)
		}
		if !v.ProfileHit(enrich.ProfileQuery{Email: fmt.Sprintf("p%d@acme%d.COM", i, i)}) {
			t.Fatalf("%s with a .com email missed at rate 1", name)
		}
		if v.ProfileHit(enrich.ProfileQuery{Name: name, Domain: fmt.Sprintf("acme%d.de", i)}) {
			other++
		}
	}
	if other < 150 || other > 250 {
		t.Fatalf("%d of 400 .de lookups matched at the default rate 0.5", other)
	}
}

func TestLedgerEqualsChargesSeen(t *testing.T) {
	t.Parallel()
	v, srv := startSeed(t, func(o *enrichtest.SeedOptions) { o.RejectSubstring = "POISON" })
	c, err := seed.NewClient(seed.Config{BaseURL: srv.URL, APIKey: "key-a"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var seen int64
	add := func(ch enrich.Charge, err error) {
		t.Helper()
		if err != nil {
			if e, ok := enrich.AsError(err); ok && e.Class == enrich.ClassPermanent {
				if e.Charge != nil {
					seen += e.Charge.Credits
				}
				return
			}
			t.Fatal(err)
		}
		if !ch.Reported {
			t.Fatal("no X-Credits-Charged")
		}
		seen += ch.Credits
	}
	var rows []enrich.ProfileQuery
	for i := range 40 {
		u := fmt.Sprintf("https://platform.example/in/member-%d", i)
		key := fmt.Sprint("row-", i)
		r, err := c.Profile(ctx, enrich.ProfileQuery{ProfileURL: u}, key+":profile")
		add(r.Charge, err)
		r, err = c.Profile(ctx, enrich.ProfileQuery{ProfileURL: u}, key+":profile") // a replay
		add(r.Charge, err)
		e, err := c.Email(ctx, u, key+":email")
		add(e.Charge, err)
		p, err := c.Phone(ctx, u, key+":phone")
		add(p.Charge, err)
		rows = append(rows, enrich.ProfileQuery{Name: fmt.Sprint("Head of ", i), Company: "Globex"})
	}
	rows = append(rows, enrich.ProfileQuery{ProfileURL: "https://platform.example/in/POISON"})
	_, err = c.Profile(ctx, enrich.ProfileQuery{Email: "POISON@x.example"}, "poison")
	add(enrich.Charge{}, err)
	b, err := c.Bulk(ctx, rows, []domain.Stage{domain.StageEmail, domain.StagePhone}, "bulk")
	add(b.Charge, err)

	var ledger int64
	for _, e := range v.Ledger() {
		ledger += e.Credits
	}
	if seen == 0 || seen != v.TotalCharged() || seen != ledger {
		t.Fatalf("client saw %d, fake total %d, ledger sum %d", seen, v.TotalCharged(), ledger)
	}
	var sum enrichtest.SeedLedgerSummary
	if r := callSeed(t, srv, "GET", "/_fake/ledger", "", "", ""); r.status != 200 || json.Unmarshal([]byte(r.body), &sum) != nil {
		t.Fatalf("/_fake/ledger: %d %s", r.status, r.body)
	}
	if sum.TotalCredits != seen || sum.BilledCalls != 40*3+1 || sum.CallsByEndpoint["bulk"] != 1 || sum.ByStatus[400] != 1 {
		t.Fatalf("summary = %+v", sum)
	}
	var st enrichtest.SeedStats
	if r := callSeed(t, srv, "GET", "/_fake/stats", "", "", ""); json.Unmarshal([]byte(r.body), &st) != nil || st.Replays != 40 || st.TotalCharged != seen {
		t.Fatalf("/_fake/stats: %s", r.body)
	}
}

func TestBulkShuffledWithRowErrors(t *testing.T) {
	t.Parallel()
	_, srv := startSeed(t, func(o *enrichtest.SeedOptions) { o.RejectSubstring = "POISON" })
	rows := []map[string]string{{"name": "CTO"}, {"profile_url": "https://platform.example/in/POISON"}, {"email": "not-an-email"}}
	for i := range 20 {
		rows = append(rows, map[string]string{"profile_url": fmt.Sprint("https://platform.example/in/m-", i)})
	}
	body, _ := json.Marshal(map[string]any{"rows": rows, "include": []string{"email", "phone"}})
	r := callSeed(t, srv, "POST", "/v1/bulk", "key-a", "", string(body))
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var out struct {
		Results []struct {
			Index   int             `json:"index"`
			Profile json.RawMessage `json:"profile"`
			Error   *struct{ Code string }
		}
	}
	if err := json.Unmarshal([]byte(r.body), &out); err != nil {
		t.Fatal(err)
	}
	var idx []int
	for _, res := range out.Results {
		idx = append(idx, res.Index)
		if (res.Error != nil) != (res.Index < 3) {
			t.Fatalf("row %d: error %v", res.Index, res.Error)
		}
	}
	if slices.IsSorted(idx) {
		t.Fatalf("results in order %v, want shuffled", idx)
	}
	slices.Sort(idx)
	for i, n := range idx {
		if i != n {
			t.Fatalf("indexes %v, want each row once", idx)
		}
	}
	if r := callSeed(t, srv, "POST", "/v1/bulk", "key-a", "", `{"rows": []}`); r.status != 400 {
		t.Fatalf("no rows: %d", r.status)
	}
	if r := callSeed(t, srv, "POST", "/v1/bulk", "key-a", "", `{"rows": [{"email": "a@b.example"}], "include": ["fax"]}`); r.status != 400 {
		t.Fatalf("bad include: %d", r.status)
	}
}

func TestIdempotency(t *testing.T) {
	t.Parallel()
	clk := newSeedClock()
	v, srv := startSeed(t, func(o *enrichtest.SeedOptions) { o.Now = clk.Now; o.ProfileHitRate = 1 })
	p := profilePath("https://platform.example/in/jane")

	first := callSeed(t, srv, "GET", p, "key-a", "idem", "")
	replay := callSeed(t, srv, "GET", p, "key-a", "idem", "")
	if first.header.Get("X-Credits-Charged") != "1" || replay.header.Get("X-Credits-Charged") != "0" ||
		replay.header.Get("Idempotent-Replayed") != "true" || replay.body != first.body {
		t.Fatalf("first %v, replay %v", first.header, replay.header)
	}
	if r := callSeed(t, srv, "GET", profilePath("https://platform.example/in/john"), "key-a", "idem", ""); r.status != 422 || errorCode(t, r.body) != "idempotency_mismatch" {
		t.Fatalf("reused key: %d %s", r.status, r.body)
	}
	// Keys are per API key.
	if r := callSeed(t, srv, "GET", p, "key-b", "idem", ""); r.header.Get("X-Credits-Charged") != "1" {
		t.Fatalf("key-b replayed key-a's answer")
	}
	// After 24 h the key is new work again.
	clk.Advance(enrichtest.SeedIdempotencyTTL + time.Minute)
	if r := callSeed(t, srv, "GET", p, "key-a", "idem", ""); r.header.Get("X-Credits-Charged") != "1" {
		t.Fatalf("expired key replayed")
	}
	// A 4xx answer is not stored: the key stays usable.
	if r := callSeed(t, srv, "GET", "/v1/profile", "key-a", "fresh", ""); r.status != 400 {
		t.Fatalf("no input: %d", r.status)
	}
	if r := callSeed(t, srv, "GET", p, "key-a", "fresh", ""); r.status != 200 {
		t.Fatalf("key after a 400: %d %s", r.status, r.body)
	}
	if v.TotalCharged() != 4 {
		t.Fatalf("charged %d, want 4", v.TotalCharged())
	}

	ign, srvIgn := startSeed(t, func(o *enrichtest.SeedOptions) { o.IgnoreIdempotency = true })
	callSeed(t, srvIgn, "GET", p, "key-a", "idem", "")
	callSeed(t, srvIgn, "GET", p, "key-a", "idem", "")
	if ign.TotalCharged() != 2 || len(ign.Ledger()) != 2 {
		t.Fatalf("ignoring idempotency charged %d", ign.TotalCharged())
	}
}

func TestAuthAndValidation(t *testing.T) {
	t.Parallel()
	_, srv := startSeed(t, func(o *enrichtest.SeedOptions) { o.NoPlanKeys = []string{"free-key"} })
	for _, tc := range []struct {
		path, key string
		status    int
		code      string
	}{
		{profilePath("https://platform.example/in/x"), "", 401, "unauthorized"},
		{profilePath("https://platform.example/in/x"), "wrong", 401, "unauthorized"},
		{profilePath("https://platform.example/in/x"), "free-key", 403, "plan_required"},
		{"/v1/profile?name=CTO", "key-a", 400, "invalid_request"},
		{"/v1/profile?profile_url=https://platform.example/in/x&email=a@b.example", "key-a", 400, "invalid_request"},
		{"/v1/profile?email=nobody", "key-a", 422, "invalid_email"},
		{"/v1/email?profile_url=platform.example", "key-a", 422, "invalid_profile_url"},
		{"/v1/phone", "key-a", 400, "invalid_request"},
	} {
		r := callSeed(t, srv, "GET", tc.path, tc.key, "", "")
		if r.status != tc.status || errorCode(t, r.body) != tc.code {
			t.Errorf("%s as %q: %d %s, want %d %s", tc.path, tc.key, r.status, r.body, tc.status, tc.code)
		}
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	v, srv := startSeed(t, func(o *enrichtest.SeedOptions) { o.Latency = 0; o.ProfileHitRate = 1 })
	p := profilePath("https://platform.example/in/jane")

	r := callSeed(t, srv, "POST", "/_fake/faults", "", "", `{"malformed_rate": 1, "slow_delay": "5ms"}`)
	if r.status != 200 || !strings.Contains(r.body, `"malformed_rate":1`) || !strings.Contains(r.body, `"slow_delay":"5ms"`) {
		t.Fatalf("POST /_fake/faults: %d %s", r.status, r.body)
	}
	r = callSeed(t, srv, "GET", p, "key-a", "", "")
	if r.status != 200 || json.Valid([]byte(r.body)) || r.header.Get("X-Credits-Charged") != "1" {
		t.Fatalf("malformed answer: %d %q %v", r.status, r.body, r.header)
	}
	for _, bad := range []string{`{"fail_rate": 2}`, `{"fail_rate": 0.6, "reset_rate": 0.6}`, `{"fail_rat": 1}`, `{"latency": "soon"}`} {
		if r := callSeed(t, srv, "POST", "/_fake/faults", "", "", bad); r.status != 400 {
			t.Fatalf("POST %s: %d", bad, r.status)
		}
	}
	r = callSeed(t, srv, "POST", "/_fake/faults", "", "", `{"malformed_rate": 0, "fail_rate": 1}`)
	if f := v.Faults(); r.status != 200 || f.FailRate != 1 || f.MalformedRate != 0 || f.SlowDelay != 5*time.Millisecond {
		t.Fatalf("faults = %+v", f)
	}
	r = callSeed(t, srv, "GET", p, "key-a", "", "")
	if r.status != 503 || errorCode(t, r.body) != "unavailable" {
		t.Fatalf("fail: %d %s", r.status, r.body)
	}
	if s := v.Stats(); s.Malformed != 1 || s.ByStatus[503] != 1 || v.TotalCharged() != 1 {
		t.Fatalf("stats = %+v, charged %d", s, v.TotalCharged())
	}
	if r := callSeed(t, srv, "GET", "/_fake/faults", "", "", ""); !strings.Contains(r.body, `"fail_rate":1`) {
		t.Fatalf("GET /_fake/faults: %s", r.body)
	}
}

func TestSeededFaultsRepeat(t *testing.T) {
	t.Parallel()
	statuses := func() []int {
		_, srv := startSeed(t, func(o *enrichtest.SeedOptions) { o.FailRate = 0.3; o.Seed = 7 })
		var out []int
		for i := range 50 {
			out = append(out, callSeed(t, srv, "GET", profilePath(fmt.Sprint("https://platform.example/in/m-", i)), "key-a", "", "").status)
		}
		return out
	}
	a, b := statuses(), statuses()
	if !slices.Equal(a, b) || !slices.Contains(a, 503) {
		t.Fatalf("same seed, different faults:\n%v\n%v", a, b)
	}
}

// With NoReplayHeader the vendor keeps to the contract to the letter: a
// replay is the first answer, charged 0, with X-Credits-Remaining, and no
// header of its own.
func TestIdempotencyWithoutReplayHeader(t *testing.T) {
	t.Parallel()
	_, srv := startSeed(t, func(o *enrichtest.SeedOptions) { o.ProfileHitRate = 1; o.NoReplayHeader = true })
	p := profilePath("https://platform.example/in/jane")
	first := callSeed(t, srv, "GET", p, "key-a", "idem", "")
	replay := callSeed(t, srv, "GET", p, "key-a", "idem", "")
	if first.header.Get("X-Credits-Charged") != "1" || replay.header.Get("X-Credits-Charged") != "0" || replay.body != first.body ||
		replay.header.Get("X-Credits-Remaining") != first.header.Get("X-Credits-Remaining") {
		t.Fatalf("first %v, replay %v", first.header, replay.header)
	}
	if _, ok := replay.header["Idempotent-Replayed"]; ok {
		t.Fatalf("replay marked: %v", replay.header)
	}
}
