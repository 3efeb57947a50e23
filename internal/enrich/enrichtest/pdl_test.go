package enrichtest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
)

const key = "pdl-test-key"

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func start(t *testing.T, mutate func(*enrichtest.PDLOptions)) (*enrichtest.PDL, *httptest.Server) {
	t.Helper()
	o := enrichtest.DefaultPDLOptions()
	o.APIKeys = []string{key}
	if mutate != nil {
		mutate(&o)
	}
	p := enrichtest.NewPDL(o)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv
}

type reply struct {
	status int
	header http.Header
	body   string
}

func call(t *testing.T, srv *httptest.Server, method, path, apiKey, body string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if apiKey != "" {
		req.Header.Set("X-Api-Key", apiKey)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func enrichPath(l enrichtest.Lookup) string {
	v := url.Values{}
	for k, s := range map[string]string{"profile": l.Profile, "email": l.Email, "name": l.Name, "company": l.Company} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return "/v5/person/enrich?" + v.Encode()
}

// lookups returns n lookups (by name at a company domain of tld) the fake
// knows (known) or does not.
func lookups(p *enrichtest.PDL, n int, known bool, tld string) []enrichtest.Lookup {
	var out []enrichtest.Lookup
	for i := 0; len(out) < n; i++ {
		l := enrichtest.Lookup{Name: fmt.Sprintf("Person %d", i), Company: fmt.Sprintf("firm%d.%s", i, tld)}
		if p.Knows(l) == known {
			out = append(out, l)
		}
	}
	return out
}

func bulkBody(ls []enrichtest.Lookup, metadata func(i int) any) string {
	type req struct {
		Params   map[string]string `json:"params"`
		Metadata any               `json:"metadata,omitempty"`
	}
	var b struct {
		Requests []req `json:"requests"`
	}
	for i, l := range ls {
		b.Requests = append(b.Requests, req{Params: map[string]string{"name": l.Name, "company": l.Company}, Metadata: metadata(i)})
	}
	s, _ := json.Marshal(b)
	return string(s)
}

func TestPDLAuthAndMethod(t *testing.T) {
	t.Parallel()
	p, srv := start(t, nil)
	l := lookups(p, 1, true, "com")[0]
	if r := call(t, srv, "GET", enrichPath(l), "", ""); r.status != 401 || !strings.Contains(r.body, "authentication_error") {
		t.Fatalf("no key: %d %s", r.status, r.body)
	}
	if r := call(t, srv, "GET", enrichPath(l), "Bearer "+key, ""); r.status != 401 {
		t.Fatalf("a Bearer token: %d", r.status)
	}
	if r := call(t, srv, "POST", enrichPath(l), key, ""); r.status != 405 {
		t.Fatalf("POST on enrich: %d", r.status)
	}
	if r := call(t, srv, "GET", "/v5/person/enrich?name=Jane", key, ""); r.status != 400 || !strings.Contains(r.body, "invalid_request_error") {
		t.Fatalf("a name alone: %d %s", r.status, r.body)
	}
	if p.TotalBilled() != 0 || len(p.Ledger()) != 0 {
		t.Fatalf("refused calls billed: %+v", p.Ledger())
	}
}

// A known person is a 200 billed one credit with the money headers; an
// unknown one a 404, free and without them.
func TestPDLMatchBilledMissFree(t *testing.T) {
	t.Parallel()
	p, srv := start(t, func(o *enrichtest.PDLOptions) { o.Credits = map[string]int64{key: 10} })
	hit, miss := lookups(p, 1, true, "de")[0], lookups(p, 1, false, "de")[0]
	r := call(t, srv, "GET", enrichPath(hit), key, "")
	var m struct {
		Status     int                        `json:"status"`
		Likelihood int                        `json:"likelihood"`
		Data       map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(r.body), &m); err != nil || r.status != 200 || m.Status != 200 || m.Likelihood < 1 || m.Likelihood > 10 {
		t.Fatalf("hit: %d %s (%v)", r.status, r.body, err)
	}
	if got := string(m.Data["linkedin_url"]); got != "null" && strings.Contains(got, "://") {
		t.Fatalf("linkedin_url with a scheme: %s", got)
	}
	if r.header.Get("X-Call-Credits-Spent") != "1" || r.header.Get("X-TotalLimit-Remaining") != "9" {
		t.Fatalf("hit headers: %v", r.header)
	}
	r = call(t, srv, "GET", enrichPath(miss), key, "")
	if r.status != 404 || !strings.Contains(r.body, "not_found") || r.header.Get("X-Call-Credits-Spent") != "" {
		t.Fatalf("miss: %d %s %v", r.status, r.body, r.header)
	}
	led := p.Ledger()
	if len(led) != 2 || led[0].Credits != 1 || led[1].Credits != 0 || led[1].Status != 404 || p.Billed(key) != 1 || p.Balance(key) != 9 {
		t.Fatalf("ledger %+v, billed %d, balance %d", led, p.Billed(key), p.Balance(key))
	}
}

// A bulk answer comes shuffled, each item echoing its metadata as sent;
// the call is billed its matches.
func TestPDLBulkShuffledMetadataEchoed(t *testing.T) {
	t.Parallel()
	p, srv := start(t, nil)
	ls := append(lookups(p, 15, true, "com"), lookups(p, 15, false, "com")...)
	body := bulkBody(ls, func(i int) any { return map[string]any{"row": i, "tag": fmt.Sprintf("t-%d", i), "nested": []int{i}} })
	r := call(t, srv, "POST", "/v5/person/bulk", key, body)
	if r.status != 200 {
		t.Fatalf("bulk: %d %s", r.status, r.body)
	}
	var items []struct {
		Status   int             `json:"status"`
		Data     json.RawMessage `json:"data"`
		Metadata struct {
			Row    int    `json:"row"`
			Tag    string `json:"tag"`
			Nested []int  `json:"nested"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(r.body), &items); err != nil || len(items) != len(ls) {
		t.Fatalf("%d items (%v)", len(items), err)
	}
	inOrder, matches := true, 0
	for pos, it := range items {
		i := it.Metadata.Row
		if it.Metadata.Tag != fmt.Sprintf("t-%d", i) || len(it.Metadata.Nested) != 1 || it.Metadata.Nested[0] != i {
			t.Fatalf("metadata not echoed: %+v", it.Metadata)
		}
		inOrder = inOrder && i == pos
		want := 404
		if i < 15 {
			want = 200
			matches++
		}
		if it.Status != want || (want == 200) != (len(it.Data) > 0) {
			t.Fatalf("item of request %d: status %d, data %s", i, it.Status, it.Data)
		}
	}
	if inOrder {
		t.Fatal("30 items came back in request order: the fake does not shuffle")
	}
	if r.header.Get("X-Call-Credits-Spent") != "15" || p.TotalBilled() != 15 || len(p.Ledger()) != 1 || p.Ledger()[0].Lookups != 30 {
		t.Fatalf("credits header %q, billed %d, ledger %+v", r.header.Get("X-Call-Credits-Spent"), p.TotalBilled(), p.Ledger())
	}
	if r := call(t, srv, "POST", "/v5/person/bulk", key, `{"requests": []}`); r.status != 400 {
		t.Fatalf("an empty bulk: %d", r.status)
	}
	if r := call(t, srv, "POST", "/v5/person/bulk", key, bulkBody(lookups(p, 101, false, "com"), func(int) any { return nil })); r.status != 400 {
		t.Fatalf("101 requests: %d", r.status)
	}
}

// Out of credits: 402 for the whole call, nothing billed; a bulk whose
// matches exceed the balance is refused whole too.
func TestPDLBlocksAtZero(t *testing.T) {
	t.Parallel()
	p, srv := start(t, func(o *enrichtest.PDLOptions) { o.Credits = map[string]int64{key: 2} })
	if r := call(t, srv, "POST", "/v5/person/bulk", key, bulkBody(lookups(p, 3, true, "fr"), func(i int) any { return map[string]int{"i": i} })); r.status != 402 {
		t.Fatalf("3 matches on 2 credits: %d %s", r.status, r.body)
	}
	for _, l := range lookups(p, 2, true, "fr") {
		if r := call(t, srv, "GET", enrichPath(l), key, ""); r.status != 200 {
			t.Fatalf("with credits: %d", r.status)
		}
	}
	r := call(t, srv, "GET", enrichPath(lookups(p, 1, false, "fr")[0]), key, "")
	if r.status != 402 || !strings.Contains(r.body, "payment_required") || r.header.Get("X-Call-Credits-Spent") != "" {
		t.Fatalf("at zero, even a miss: %d %s", r.status, r.body)
	}
	if p.Billed(key) != 2 || p.Balance(key) != 0 || len(p.Ledger()) != 2 {
		t.Fatalf("billed %d, balance %d, ledger %+v", p.Billed(key), p.Balance(key), p.Ledger())
	}
	p.SetBalance(key, 5)
	if r := call(t, srv, "GET", enrichPath(lookups(p, 1, true, "fr")[0]), key, ""); r.status != 200 || r.header.Get("X-TotalLimit-Remaining") != "4" {
		t.Fatalf("after a top-up: %d %v", r.status, r.header)
	}
}

// The fixed 60 s window counts per key and endpoint; past it a 429 names
// the window's end; the next window starts afresh.
func TestPDLRateWindow(t *testing.T) {
	t.Parallel()
	clk := newClock()
	p, srv := start(t, func(o *enrichtest.PDLOptions) {
		o.RPM, o.Now = 2, clk.Now
		o.APIKeys = []string{key, "other-key"}
	})
	l := lookups(p, 1, false, "com")[0]
	for i := range 2 {
		if r := call(t, srv, "GET", enrichPath(l), key, ""); r.status != 404 || r.header.Get("X-RateLimit-Remaining") != fmt.Sprintf("{'minute': %d, 'day': None, 'month': None}", 1-i) {
			t.Fatalf("call %d: %d %v", i, r.status, r.header)
		}
	}
	r := call(t, srv, "GET", enrichPath(l), key, "")
	if r.status != 429 || !strings.Contains(r.body, "rate_limit_error") || r.header.Get("X-RateLimit-Reset") != "2026-03-01T12:01:00Z" {
		t.Fatalf("past the window: %d %s reset %q", r.status, r.body, r.header.Get("X-RateLimit-Reset"))
	}
	if r := call(t, srv, "POST", "/v5/person/bulk", key, bulkBody([]enrichtest.Lookup{l}, func(int) any { return nil })); r.status != 200 {
		t.Fatalf("another endpoint, same key: %d", r.status)
	}
	if r := call(t, srv, "GET", enrichPath(l), "other-key", ""); r.status != 404 {
		t.Fatalf("another key: %d", r.status)
	}
	clk.Advance(30 * time.Second)
	if r := call(t, srv, "GET", enrichPath(l), key, ""); r.status != 404 {
		t.Fatalf("the next window: %d", r.status)
	}
}

// The truth is deterministic, per segment, and a hook overrides it.
func TestPDLTruthPerSegment(t *testing.T) {
	t.Parallel()
	rates := map[string]float64{"de": 0.9, "fr": 0.1}
	a := enrichtest.NewPDL(func() enrichtest.PDLOptions {
		o := enrichtest.DefaultPDLOptions()
		o.SegmentHitRates = rates
		return o
	}())
	b := enrichtest.NewPDL(func() enrichtest.PDLOptions {
		o := enrichtest.DefaultPDLOptions()
		o.SegmentHitRates = rates
		return o
	}())
	count := func(p *enrichtest.PDL, tld string) int {
		n := 0
		for i := range 400 {
			l := enrichtest.Lookup{Name: fmt.Sprintf("P %d", i), Company: "acme." + tld}
			if l.Segment() != tld {
				t.Fatalf("segment of %+v = %q", l, l.Segment())
			}
			if p.Knows(l) {
				n++
			}
			if p.Knows(l) != b.Knows(l) {
				t.Fatalf("two fakes of one seed disagree on %+v", l)
			}
		}
		return n
	}
	if de, fr, com := count(a, "de"), count(a, "fr"), count(a, "com"); de < 330 || fr > 70 || com < 190 || com > 290 {
		t.Fatalf("known of 400: de %d, fr %d, com %d (rates 0.9, 0.1, default 0.6)", de, fr, com)
	}
	for l, want := range map[enrichtest.Lookup]string{
		{Email: "jane@acme.co.uk"}:                      "uk",
		{Name: "Jane", Company: "https://www.acme.de/"}: "de",
		{Name: "Jane", Company: "Acme GmbH"}:            "",
		{Profile: "https://platform.example/in/jane"}:   "",
	} {
		if got := l.Segment(); got != want {
			t.Errorf("Segment(%+v) = %q, want %q", l, got, want)
		}
	}
	other := enrichtest.NewPDL(func() enrichtest.PDLOptions {
		o := enrichtest.DefaultPDLOptions()
		o.Seed = 2
		return o
	}())
	differ := 0
	for i := range 100 {
		l := enrichtest.Lookup{Name: fmt.Sprintf("P %d", i), Company: "acme.com"}
		if other.Knows(l) != a.Knows(l) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("another seed knows the very same people")
	}
	hook := enrichtest.NewPDL(enrichtest.PDLOptions{Knows: func(l enrichtest.Lookup) bool { return strings.HasPrefix(l.Name, "Known") }})
	if !hook.Knows(enrichtest.Lookup{Name: "Known One", Company: "x.fr"}) || hook.Knows(enrichtest.Lookup{Name: "Other", Company: "x.de"}) {
		t.Fatal("the Knows hook is not the truth")
	}
}

// required and min_likelihood turn matches that lack them into 404s, free.
func TestPDLRequiredAndMinLikelihood(t *testing.T) {
	t.Parallel()
	p, srv := start(t, func(o *enrichtest.PDLOptions) { o.WorkEmailRate = 0.5 })
	ls := lookups(p, 40, true, "com")
	with, without := 0, 0
	for _, l := range ls {
		r := call(t, srv, "GET", enrichPath(l)+"&required=work_email", key, "")
		switch r.status {
		case 200:
			with++
			if !strings.Contains(r.body, `"work_email":"`) {
				t.Fatalf("required work_email answered without one: %s", r.body)
			}
		case 404:
			without++
		default:
			t.Fatalf("required: %d %s", r.status, r.body)
		}
	}
	if with == 0 || without == 0 || p.TotalBilled() != int64(with) {
		t.Fatalf("with %d, without %d, billed %d", with, without, p.TotalBilled())
	}
	if r := call(t, srv, "GET", enrichPath(ls[0])+"&min_likelihood=11", key, ""); r.status != 400 {
		t.Fatalf("min_likelihood 11: %d", r.status)
	}
	low := 0
	for _, l := range ls {
		if r := call(t, srv, "GET", enrichPath(l)+"&min_likelihood=10", key, ""); r.status == 404 {
			low++
		}
	}
	if low == 0 {
		t.Fatal("min_likelihood=10 turned no match into a 404")
	}
}

func TestPDLFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		set    func(*enrichtest.PDLOptions)
		status int // 0: the connection is reset
		billed int64
	}{
		{"503", func(o *enrichtest.PDLOptions) { o.FailRate = 1 }, 503, 0},
		{"malformed", func(o *enrichtest.PDLOptions) { o.MalformedRate = 1 }, 200, 1},
		{"reset", func(o *enrichtest.PDLOptions) { o.ResetRate = 1 }, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, srv := start(t, tc.set)
			l := lookups(p, 1, true, "com")[0]
			// POST: the client does not resend it after a reset.
			req, _ := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v5/person/bulk",
				strings.NewReader(bulkBody([]enrichtest.Lookup{l}, func(int) any { return map[string]int{"i": 0} })))
			req.Header.Set("X-Api-Key", key)
			resp, err := srv.Client().Do(req)
			switch {
			case tc.status == 0:
				if err == nil {
					resp.Body.Close()
					t.Fatalf("status %d, want a reset", resp.StatusCode)
				}
			case err != nil:
				t.Fatal(err)
			default:
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status || (tc.name == "malformed" && json.Valid(b)) {
					t.Fatalf("status %d, body %s", resp.StatusCode, b)
				}
			}
			if p.TotalBilled() != tc.billed {
				t.Fatalf("billed %d, want %d", p.TotalBilled(), tc.billed)
			}
		})
	}
}
