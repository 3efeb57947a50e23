package rig_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// Hostile and malformed uploads against the real API handler over a real
// connection: each gets a clear 4xx within bounded time (and memory),
// nothing is stored, and the server answers normally afterwards. The
// parser's own table tests (internal/ingest) cover the same inputs in
// detail; these are the ones that only the whole server path can show:
// sizes, streams that never end, and what is stored or exported.

const apiKey = "chaos-key-0001"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type apiRig struct {
	st  *store.Store
	srv *httptest.Server
}

func newAPI(t *testing.T, opts ...func(*service.Config, *httpapi.Deps)) *apiRig {
	t.Helper()
	st := storetest.New(t)
	cfg := service.Config{Store: st, Submitter: &service.Submitter{Store: st, Log: quiet}} // no queue: the scheduler would enqueue
	deps := httpapi.Deps{
		Keys: httpapi.NewStaticKeys(map[string]string{apiKey: "acme"}),
		Log:  quiet,
	}
	for _, o := range opts {
		o(&cfg, &deps)
	}
	deps.Service = service.New(cfg)
	srv := httptest.NewServer(httpapi.NewServer(deps))
	t.Cleanup(srv.Close)
	return &apiRig{st: st, srv: srv}
}

type answer struct {
	status int
	code   string
	body   []byte
	took   time.Duration
}

// post sends body (streamed, without a Content-Length when it is not a
// *bytes.Reader or *strings.Reader) and reads the answer, within a bound.
func (a *apiRig) post(t *testing.T, ctype, query string, body io.Reader, header ...string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := a.srv.URL + "/v1/jobs"
	if query != "" {
		path += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	start := time.Now()
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	return answer{status: resp.StatusCode, code: e.Error.Code, body: data, took: time.Since(start)}
}

func (a *apiRig) counts(t *testing.T) (jobsN, rowsN int) {
	t.Helper()
	return storetest.JobsAndRows(t, a.st)
}

// healthy checks that the server still works: /healthz, and a good upload.
func (a *apiRig) healthy(t *testing.T) {
	t.Helper()
	resp, err := a.srv.Client().Get(a.srv.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz after the bad uploads: %v %v", resp, err)
	}
	resp.Body.Close()
	jobsBefore, _ := a.counts(t)
	if got := a.post(t, "text/csv", "", strings.NewReader("profile_url\nhttps://platform.example/in/fine\n")); got.status != http.StatusCreated {
		t.Fatalf("a good upload after the bad ones: %d %s", got.status, got.body)
	}
	if jobsN, _ := a.counts(t); jobsN != jobsBefore+1 {
		t.Fatalf("jobs %d after a good upload, want %d", jobsN, jobsBefore+1)
	}
}

// gen is an io.Reader of a header and then rows made by row(i), up to n
// rows (n < 0: forever), never held in memory. The HTTP client may still be
// reading it when the answer comes: rows and sent are safe to call then.
type gen struct {
	head  string
	row   func(i int) string
	n     int
	mu    sync.Mutex
	i     int
	buf   []byte
	bytes int64
}

func (g *gen) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.head != "" {
		g.buf = append(g.buf, g.head...)
		g.head = ""
	}
	for len(g.buf) < len(p) && (g.n < 0 || g.i < g.n) {
		g.buf = append(g.buf, g.row(g.i)...)
		g.i++
	}
	if len(g.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, g.buf)
	g.buf = g.buf[:copy(g.buf, g.buf[n:])]
	g.bytes += int64(n)
	return n, nil
}

// sent is how many bytes were read so far.
func (g *gen) sent() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.bytes
}

// heapPeak samples the heap while fn runs and returns its growth.
func heapPeak(fn func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

func TestHostileUploads(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	wide := strings.Repeat("c,", 9999) + "profile_url\n" + strings.Repeat(",", 9999) + "https://platform.example/in/x\n"
	cases := []struct {
		name, ctype, query, body string
		status                   int
		code                     string
	}{
		{"broken quoting: bare quote in a cell", "text/csv", "", "profile_url,ref\nhttps://platform.example/in/a,x\"y\n", 400, ingest.CodeMalformedCSV},
		{"broken quoting: quote never closed", "text/csv", "", "ref,profile_url\n\"1,https://platform.example/in/a\n2,https://platform.example/in/b\n", 400, ingest.CodeMalformedCSV},
		{"broken quoting after a BOM and CRLF", "text/csv", "", "\ufeffref,profile_url\r\n1,\"https://platform.example/in/a\r\n", 400, ingest.CodeMalformedCSV},
		// Bytes that are not UTF-8 after ASCII alone read as Windows-1252 (docs/uploads.md); after UTF-8 text,
		// or in a file said to be UTF-8, they are refused.
		{"non-UTF-8 bytes in a cell after UTF-8 text", "text/csv", "", "ref,profile_url\nré,https://platform.example/in/a\nr\xff\xfe1,https://platform.example/in/b\n", 422, ingest.CodeInvalidRows},
		{"Latin-1 encoded file said to be UTF-8", "text/csv", "roles=CTO&encoding=utf-8", "ref,company\n1,M\xfcller GmbH\n", 422, ingest.CodeInvalidRows},
		{"UTF-16 file", "text/csv", "", "\xff\xfep\x00r\x00o\x00f\x00i\x00l\x00e\x00\n\x00", 422, ""},
		{"NUL bytes", "text/csv", "", "ref,profile_url\n\x00\x00,https://platform.example/in/a\n", 422, ingest.CodeInvalidRows},
		{"10,000 columns", "text/csv", "", wide, 422, ""},
		{"a 1 MB cell", "text/csv", "", "ref,profile_url\n" + strings.Repeat("r", 1<<20) + ",https://platform.example/in/a\n", 422, ""},
		{"a 1 MB line without a newline", "text/csv", "", "profile_url\n" + strings.Repeat("h", 1<<20), 422, ""},
		{"unknown JSON field at the top", "application/json", "", `{"rows": [{"profile_url": "https://platform.example/in/a"}], "webhook": "http://x"}`, 400, ingest.CodeMalformedJSON},
		{"unknown JSON field in a row", "application/json", "", `{"rows": [{"profile_url": "https://platform.example/in/a", "linkedin": "x"}]}`, 400, ingest.CodeMalformedJSON},
		{"wrong types", "application/json", "", `{"rows": [{"company": 42}], "roles": "CTO", "budget_credits": "lots"}`, 400, ingest.CodeMalformedJSON},
		{"rows is an object", "application/json", "", `{"rows": {"company": "Acme"}}`, 400, ingest.CodeMalformedJSON},
		{"nested 100,000 deep", "application/json", "", `{"rows": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`, 400, ingest.CodeMalformedJSON},
		{"JSON with a 1 MB string", "application/json", "", `{"rows": [{"name": "` + strings.Repeat("x", 1<<20) + `", "company": "Acme"}]}`, 422, ""},
		{"JSON not UTF-8", "application/json", "", "{\"rows\": [{\"company\": \"Ac\xffme\"}], \"roles\": [\"CTO\"]}", 400, ingest.CodeMalformedJSON},
		{"JSON truncated", "application/json", "", `{"rows": [{"company": "Acme"`, 400, ingest.CodeMalformedJSON},
		{"negative budget", "application/json", "", `{"rows": [{"profile_url": "https://platform.example/in/a"}], "budget_credits": -5}`, 422, ingest.CodeInvalidOptions},
	}
	for _, c := range cases {
		got := a.post(t, c.ctype, c.query, strings.NewReader(c.body))
		if got.status != c.status && !(c.code == "" && got.status/100 == 4 && got.status != http.StatusUnauthorized) {
			t.Errorf("%s: %d %s, want %d", c.name, got.status, clip(got.body), c.status)
			continue
		}
		if c.code != "" && got.code != c.code {
			t.Errorf("%s: code %q, want %q (%s)", c.name, got.code, c.code, clip(got.body))
		}
		if got.code == "" || got.code == "internal" {
			t.Errorf("%s: answer without a clear error code: %d %s", c.name, got.status, clip(got.body))
		}
		if got.took > 10*time.Second {
			t.Errorf("%s: answered after %s", c.name, got.took)
		}
	}
	if jobsN, rowsN := a.counts(t); jobsN != 0 || rowsN != 0 {
		t.Fatalf("rejected uploads stored %d jobs and %d rows", jobsN, rowsN)
	}
	a.healthy(t)
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// A 100 MB file (over the 64 MiB default limit) is refused with 413 once
// the limit is read: streamed, in bounded memory, nothing stored.
func TestUpload100MB(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("reads 64 MiB")
	}
	a := newAPI(t)
	// Rows of about 4 KB (a long extra column, under the cell limit) so that the byte limit comes first.
	note := strings.Repeat("n", 4000)
	g := &gen{head: "profile_url,note\n", n: 25 << 10, row: func(i int) string {
		return fmt.Sprintf("https://platform.example/in/p-%d,%s\n", i, note)
	}}
	var got answer
	grew := heapPeak(func() { got = a.post(t, "text/csv", "", g) })
	if got.status != http.StatusRequestEntityTooLarge || got.code != ingest.CodeTooLarge {
		t.Fatalf("100 MB upload: %d %s", got.status, clip(got.body))
	}
	if g.sent() > 80<<20 {
		t.Errorf("the client sent %d MB before the answer: the server read past its limit", g.sent()>>20)
	}
	// The parser holds one record, the store a batch of 5,000 rows (here 20 MB): below the
	// upload's size. The heap is sampled with other tests running: a loose bound.
	if grew > 96<<20 {
		t.Errorf("the heap grew by %d MB during a 100 MB upload", grew>>20)
	}
	t.Logf("100 MB upload: %d in %s, %d MB sent, heap +%d MB", got.status, got.took.Round(time.Millisecond), g.sent()>>20, grew>>20)
	if jobsN, rowsN := a.counts(t); jobsN != 0 || rowsN != 0 {
		t.Fatalf("stored %d jobs and %d rows", jobsN, rowsN)
	}
	a.healthy(t)
}

// A million rows against a limit of 10,000 lookups: refused with 413 at row
// 10,001; nothing stored. The body is received whole to disk before it is
// parsed (so that a slow client holds no database connection), bounded by
// the byte limit (TestUpload100MB), not by the lookups.
func TestUploadMillionRows(t *testing.T) {
	t.Parallel()
	a := newAPI(t, func(c *service.Config, _ *httpapi.Deps) { c.Limits = ingest.Limits{MaxLookups: 10_000} })
	g := &gen{head: "email\n", n: 1_000_000, row: func(i int) string { return fmt.Sprintf("person%07d@example-company.co\n", i) }}
	got := a.post(t, "text/csv", "", g)
	if got.status != http.StatusRequestEntityTooLarge || got.code != ingest.CodeTooLarge {
		t.Fatalf("a million rows: %d %s", got.status, clip(got.body))
	}
	if jobsN, rowsN := a.counts(t); jobsN != 0 || rowsN != 0 {
		t.Fatalf("stored %d jobs and %d rows", jobsN, rowsN)
	}
	a.healthy(t)
}

// A million and one rows at the default ENRICHQ_MAX_ROWS (a million): 413,
// streamed in bounded memory, nothing stored. It streams a million rows
// through a COPY that is rolled back (about 35 s with -race), so it runs
// only with CHAOS_HUGE=1.
func TestUploadMillionRowsDefaultLimit(t *testing.T) {
	t.Parallel()
	if os.Getenv("CHAOS_HUGE") == "" {
		t.Skip("set CHAOS_HUGE=1: streams a million rows through the store (about 35 s)")
	}
	a := newAPI(t)
	g := &gen{head: "email\n", n: 1_000_001, row: func(i int) string { return fmt.Sprintf("p%d@x.co\n", i) }}
	var got answer
	grew := heapPeak(func() { got = a.post(t, "text/csv", "", g) })
	if got.status != http.StatusRequestEntityTooLarge || got.code != ingest.CodeTooLarge {
		t.Fatalf("a million and one rows: %d %s", got.status, clip(got.body))
	}
	if grew > 64<<20 {
		t.Errorf("the heap grew by %d MB for a %d MB upload", grew>>20, g.sent()>>20)
	}
	t.Logf("1,000,001 rows (%d MB): %d in %s, heap +%d MB", g.sent()>>20, got.status, got.took.Round(time.Millisecond), grew>>20)
	if jobsN, rowsN := a.counts(t); jobsN != 0 || rowsN != 0 {
		t.Fatalf("stored %d jobs and %d rows", jobsN, rowsN)
	}
	a.healthy(t)
}

// Bodies that never end: an endless fast stream is cut at the byte limit
// (413); one that trickles forever is cut at the upload's hard bound
// (408); one that stops sending is cut at the idle bound (408). Nothing is
// stored, and the server goes on.
func TestBodyThatNeverEnds(t *testing.T) {
	t.Parallel()
	// Endless bodies on a server with generous time bounds (so that the byte
	// limit is what ends them, even on a loaded machine); trickling ones on a
	// server whose hard bound is 2s.
	a := newAPI(t, func(c *service.Config, _ *httpapi.Deps) { c.Limits = ingest.Limits{MaxBytes: 1 << 20} })
	slow := newAPI(t, func(c *service.Config, d *httpapi.Deps) {
		c.Limits = ingest.Limits{MaxBytes: 1 << 20}
		d.UploadIdleTimeout = 300 * time.Millisecond
		d.UploadTimeout = 2 * time.Second
	})

	// Endless and fast: a chunked body written as fast as the server reads.
	endless := func(ctype, head, row string) {
		conn, err := net.Dial("tcp", a.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		answered := make(chan *http.Response, 1)
		go func() {
			_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second)) // a failsafe far beyond the bound
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				resp = nil
			}
			answered <- resp
		}()
		w := bufio.NewWriterSize(conn, 64<<10)
		fmt.Fprintf(w, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n", apiKey, ctype)
		fmt.Fprintf(w, "%x\r\n%s\r\n", len(head), head)
		chunk := strings.Repeat(row, 1000)
		sent := 0
		for {
			select {
			case resp := <-answered:
				if resp == nil {
					t.Errorf("endless %s: no answer", ctype)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusRequestEntityTooLarge || time.Since(start) > 30*time.Second {
					t.Errorf("endless %s: %d after %s, want 413", ctype, resp.StatusCode, time.Since(start))
				}
				if sent > 8<<20 {
					t.Errorf("endless %s: %d MB sent before the answer, over a limit of 1 MB", ctype, sent>>20)
				}
				return
			default:
			}
			_, err := fmt.Fprintf(w, "%x\r\n%s\r\n", len(chunk), chunk)
			sent += len(chunk)
			if err != nil || sent > 64<<20 {
				// Cut off by the server: its answer is due now.
				_ = conn.(*net.TCPConn).CloseWrite()
				select {
				case resp := <-answered:
					if resp == nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
						t.Errorf("endless %s: cut off after %d MB with answer %v", ctype, sent>>20, resp)
					} else {
						resp.Body.Close()
					}
				case <-time.After(10 * time.Second):
					t.Errorf("endless %s: cut off after %d MB (%v) without an answer", ctype, sent>>20, err)
				}
				return
			}
		}
	}
	endless("text/csv", "profile_url\n", "https://platform.example/in/endless\n")
	endless("application/json", `{"rows": [`, `{"profile_url": "https://platform.example/in/j"},`)

	// Trickling: a row every 100 ms, forever (each read is within the idle
	// bound; the hard bound ends it).
	trickle := func(ctype, head, row string) {
		conn, err := net.Dial("tcp", slow.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n", apiKey, ctype)
		fmt.Fprintf(conn, "%x\r\n%s\r\n", len(head), head)
		start := time.Now()
		answered := make(chan *http.Response, 1)
		go func() {
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a failsafe far beyond the bound
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				resp = nil
			}
			answered <- resp
		}()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case resp := <-answered:
				if resp == nil {
					t.Errorf("trickling %s: no answer", ctype)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusRequestTimeout || time.Since(start) > 10*time.Second {
					t.Errorf("trickling %s: %d after %s, want 408 after about 2s", ctype, resp.StatusCode, time.Since(start))
				}
				return
			case <-tick.C:
				if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(row), row); err != nil {
					// The server may cut the connection once it has answered.
					select {
					case resp := <-answered:
						if resp != nil {
							resp.Body.Close()
							if resp.StatusCode != http.StatusRequestTimeout {
								t.Errorf("trickling %s: %d", ctype, resp.StatusCode)
							}
						}
					case <-time.After(5 * time.Second):
						t.Errorf("trickling %s: write failed (%v) without an answer", ctype, err)
					}
					return
				}
			}
		}
	}
	trickle("text/csv", "profile_url\n", "https://platform.example/in/slow\n")
	trickle("application/json", `{"rows": [`, `{"profile_url": "https://platform.example/in/slow"},`)

	for _, srv := range []*apiRig{a, slow} {
		if jobsN, rowsN := srv.counts(t); jobsN != 0 || rowsN != 0 {
			t.Fatalf("endless bodies stored %d jobs and %d rows", jobsN, rowsN)
		}
		srv.healthy(t)
	}
}

// Formulas and SQL in cells are data: stored as sent, harmless to the
// tables, and neutralised in the CSV export.
func TestFormulasAndSQLAreData(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	sqlRef := `x'); DROP TABLE jobs; --`
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"ref", "profile_url", "note"})
	_ = w.Write([]string{"=HYPERLINK(\"http://evil.example\",\"click\")", "https://platform.example/in/a", "+SUM(A1:A9)"})
	_ = w.Write([]string{sqlRef, "https://platform.example/in/b", "@cmd|'/c calc'!A0"})
	_ = w.Write([]string{"-2+3", "https://platform.example/in/c", "\tTAB"})
	w.Flush()
	got := a.post(t, "text/csv", "", bytes.NewReader(b.Bytes()))
	if got.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", got.status, clip(got.body))
	}
	var st struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(got.body, &st)
	stored, err := a.st.ListResults(context.Background(), st.ID, "", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(stored, func(i, j int) bool { return stored[i].InputRow < stored[j].InputRow })
	var refs []string
	for _, r := range stored {
		refs = append(refs, r.Ref)
	}
	if len(refs) != 3 || refs[1] != sqlRef || !strings.HasPrefix(refs[0], "=HYPERLINK") {
		t.Fatalf("stored refs %q, want them as sent", refs)
	}
	req, _ := http.NewRequest(http.MethodGet, a.srv.URL+"/v1/jobs/"+st.ID+"/results?format=csv", nil)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	recs, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || len(recs) != 4 {
		t.Fatalf("export: %d records, %v", len(recs), err)
	}
	for _, rec := range recs[1:] {
		for _, cell := range rec {
			if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
				t.Errorf("export cell %q would run in a spreadsheet", cell)
			}
		}
	}
	a.healthy(t)
}
