package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
)

func TestSubmitJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, data := b.submitJSON(t, keyA, `{
		"name": "Q4 outbound, DACH",
		"rows": [
			{"ref": "crm-0001", "company": "Acme GmbH"},
			{"ref": "crm-0002", "profile_url": "https://platform.example/in/jane-doe"},
			{"ref": "crm-0003", "name": "John Roe", "company": "Beta AG", "extra": {"owner": "kim"}}
		],
		"roles": ["VP Sales", "Head of Marketing"],
		"lookups": ["email", "profile"],
		"budget_credits": 5000,
		"max_age": "720h"
	}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	st := decode[jobStatus](t, data)
	if loc := resp.Header.Get("Location"); loc != "/v1/jobs/"+st.ID {
		t.Errorf("Location = %q, want /v1/jobs/%s", loc, st.ID)
	}
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type = %q", resp.Header.Get("Content-Type"))
	}
	// One company × two roles, plus two rows.
	if st.Name != "Q4 outbound, DACH" || st.State != domain.JobQueued || st.Rows.Total != 4 || st.Rows.Pending != 4 {
		t.Errorf("status = %+v", st)
	}
	if st.Credits.Budget == nil || *st.Credits.Budget != 5000 || st.Credits.Spent != 0 {
		t.Errorf("credits = %+v", st.Credits)
	}
	if joinStages(st.Lookups, ",") != "profile,email" || st.Progress != 0 || st.ETASeconds != nil || st.StartedAt != nil || st.FinishedAt != nil {
		t.Errorf("status = %+v", st)
	}
	// Every row state is in the body, and the times are RFC 3339 or null.
	raw := decode[map[string]any](t, data)
	rows := raw["rows"].(map[string]any)
	names := []string{"total"}
	for _, s := range domain.RowStates {
		names = append(names, string(s))
	}
	for _, s := range names {
		if _, ok := rows[s]; !ok {
			t.Errorf("rows.%s missing: %s", s, data)
		}
	}
	if _, err := time.Parse(time.RFC3339, raw["created_at"].(string)); err != nil {
		t.Errorf("created_at: %v", err)
	}
	for _, k := range []string{"started_at", "finished_at", "eta_seconds"} {
		if v, ok := raw[k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
	// The GET answers the same job, and its chunk is in the queue.
	resp, data = b.call(t, http.MethodGet, "/v1/jobs/"+st.ID, keyA, nil)
	if got := decode[jobStatus](t, data); resp.StatusCode != http.StatusOK || got.ID != st.ID || got.Rows.Pending != 4 {
		t.Fatalf("GET: %d %s", resp.StatusCode, data)
	}
	tasks, err := b.Enqueuer.Inspector.ListPendingTasks(b.Queue)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("pending tasks: %d, err %v; want 1", len(tasks), err)
	}
}

func TestSubmitCSVExpandsRoles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	csv := "ref,company,profile_url,crm_id\n" +
		"1,Acme GmbH,,a\n" +
		"2,Beta AG,,b\n" +
		"3,Gamma SA,,c\n" +
		"4,,https://platform.example/in/jane,d\n"
	st := b.mustCreate(t, keyA, "roles=VP%20Sales,CTO&lookups=profile,email&name=csv%20job&budget_credits=500", csv)
	if st.Rows.Total != 3*2+1 || st.Name != "csv job" || strings.Join(st.Roles, "|") != "VP Sales|CTO" {
		t.Fatalf("status = %+v", st)
	}
	rows, err := b.Store.ListResults(context.Background(), st.ID, "", 0, 100)
	var roles, extras int
	for _, r := range rows {
		if r.Role != "" {
			roles++
		}
		if r.Extra["crm_id"] != "" {
			extras++
		}
	}
	if err != nil || roles != 6 || extras != 7 {
		t.Fatalf("rows with a role: %d (want 6), with extra crm_id: %d (want 7), err %v", roles, extras, err)
	}
}

func TestSubmitMultipart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ct, body := multipartBody(t, [][2]string{{"note", "ignored"}, {"lookups", "phone"}}, "list.csv",
		"profile_url\nhttps://platform.example/in/a\nhttps://platform.example/in/b\n")
	resp, data := b.call(t, http.MethodPost, "/v1/jobs?lookups=profile,email", keyA, body, "Content-Type", ct)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	st := decode[jobStatus](t, data)
	if st.Rows.Total != 2 || joinStages(st.Lookups, ",") != "profile,email" {
		t.Fatalf("status = %+v (form fields must not set options)", st)
	}
	// Without a file field: 400, nothing stored.
	ct, body = multipartBody(t, [][2]string{{"note", "x"}}, "", "")
	resp, data = b.call(t, http.MethodPost, "/v1/jobs", keyA, body, "Content-Type", ct)
	if resp.StatusCode != http.StatusBadRequest || apiErr(t, data).Code != "missing_file" {
		t.Fatalf("no file: %d %s", resp.StatusCode, data)
	}
}

func TestSubmitIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t, func(d *deps) { d.svc.UploadsPerTenant = 8 }) // the replays come at once
	body := `{"rows": [{"profile_url": "https://platform.example/in/a"}]}`
	resp, data := b.submitJSON(t, keyA, body, "Idempotency-Key", "batch-7")
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %s", resp.StatusCode, data)
	}
	first := decode[jobStatus](t, data)

	// Replays, some at the same time, as JSON and as the same rows in a CSV: the first job, never a second.
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			var resp *http.Response
			var data []byte
			if i%2 == 0 {
				resp, data = b.submitJSON(t, keyA, body, "Idempotency-Key", "batch-7")
			} else {
				resp, data = b.submitCSV(t, keyA, "", "profile_url\nhttps://platform.example/in/a\n", "Idempotency-Key", "batch-7")
			}
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" ||
				resp.Header.Get("Location") != "/v1/jobs/"+first.ID {
				t.Errorf("replay: %d %v %s", resp.StatusCode, resp.Header, data)
				return
			}
			if got := decode[jobStatus](t, data); got.ID != first.ID || got.Rows.Total != 1 {
				t.Errorf("replay answered %+v, want job %s", got, first.ID)
			}
		})
	}
	wg.Wait()
	if jobsN, rowsN := b.counts(t); jobsN != 1 || rowsN != 1 {
		t.Fatalf("%d jobs and %d rows stored; want 1 and 1", jobsN, rowsN)
	}
	// The key with another request (other rows, another budget) is refused: nothing stored, the first job stays.
	for name, send := range map[string]func() (*http.Response, []byte){
		"other rows": func() (*http.Response, []byte) {
			return b.submitCSV(t, keyA, "", "profile_url\nhttps://platform.example/in/zzz\n", "Idempotency-Key", "batch-7")
		},
		"another budget": func() (*http.Response, []byte) {
			return b.submitJSON(t, keyA, `{"rows": [{"profile_url": "https://platform.example/in/a"}], "budget_credits": 5}`, "Idempotency-Key", "batch-7")
		},
		"another vendor order": func() (*http.Response, []byte) {
			return b.submitJSON(t, keyA, `{"rows": [{"profile_url": "https://platform.example/in/a"}], "vendors": ["vendor"]}`, "Idempotency-Key", "batch-7")
		},
	} {
		if resp, data := send(); resp.StatusCode != http.StatusUnprocessableEntity || apiErr(t, data).Code != "idempotency_key_reused" {
			t.Errorf("%s: %d %s", name, resp.StatusCode, data)
		}
	}
	if jobsN, rowsN := b.counts(t); jobsN != 1 || rowsN != 1 {
		t.Fatalf("%d jobs and %d rows stored; want 1 and 1", jobsN, rowsN)
	}
	// Another tenant's key space is its own.
	resp, data = b.submitJSON(t, keyB, body, "Idempotency-Key", "batch-7")
	if resp.StatusCode != http.StatusCreated || decode[jobStatus](t, data).ID == first.ID {
		t.Fatalf("other tenant: %d %s", resp.StatusCode, data)
	}
	// A key over 200 characters is refused.
	resp, data = b.submitJSON(t, keyA, body, "Idempotency-Key", strings.Repeat("k", 201))
	if resp.StatusCode != http.StatusBadRequest || apiErr(t, data).Code != "invalid_idempotency_key" {
		t.Fatalf("long key: %d %s", resp.StatusCode, data)
	}
	if jobsN, _ := b.counts(t); jobsN != 2 {
		t.Fatalf("%d jobs stored; want 2", jobsN)
	}
}

func TestSubmitRejectsBadUploads(t *testing.T) {
	t.Parallel()
	b := setup(t, func(d *deps) { d.svc.Limits = ingest.Limits{MaxBytes: 4096} })
	big := "profile_url\n" + strings.Repeat("https://platform.example/in/someone-with-a-long-name\n", 200)
	bigPartType, bigPart := multipartBody(t, nil, "big.csv", big)
	// A form field before the file, over MaxBytes and the multipart slack: the body's own cap.
	hugeFieldType, hugeField := multipartBody(t, [][2]string{{"note", strings.Repeat("n", bodySlack+8192)}}, "list.csv", oneRow)
	badPartType, badPart := multipartBody(t, nil, "bad.csv", "name,company\nJane,\n")
	type at struct {
		row    int
		column string
	}
	cases := []struct {
		name        string
		contentType string
		query       string
		body        string
		status      int
		code        string
		at          *at // the first detail
	}{
		{"malformed CSV", "text/csv", "", "ref,profile_url\n1,\"https://platform.example/in/a\n", 400, ingest.CodeMalformedCSV, &at{1, ""}},
		{"company without roles", "text/csv", "", "ref,company\n1,Acme\n", 422, ingest.CodeInvalidRows, &at{1, "company"}},
		{"empty file", "text/csv", "", "", 422, ingest.CodeEmptyUpload, nil},
		{"header only", "text/csv", "", "profile_url\n", 422, ingest.CodeEmptyUpload, nil},
		{"oversized CSV", "text/csv", "", big, 413, ingest.CodeTooLarge, nil},
		{"oversized JSON", "application/json", "", `{"rows": [{"name": "` + strings.Repeat("x", 5000) + `"}]}`, 413, ingest.CodeTooLarge, nil},
		{"bad URL in row 2", "text/csv", "", "profile_url\nhttps://platform.example/in/a\nftp://platform.example/in/b\n", 422, ingest.CodeInvalidRows, &at{2, "profile_url"}},
		{"bad URL in JSON", "application/json", "", `{"rows": [{"email": "a@b.example"}, {"profile_url": "not a url"}]}`, 422, ingest.CodeInvalidRows, &at{2, "profile_url"}},
		{"malformed JSON", "application/json", "", `{"rows": [`, 400, ingest.CodeMalformedJSON, nil},
		{"unknown JSON field", "application/json", "", `{"rows": [{"profile_url": "https://platform.example/in/a", "phone": "1"}]}`, 400, ingest.CodeMalformedJSON, &at{1, "phone"}},
		{"bad option", "text/csv", "lookups=profile,fax", "profile_url\nhttps://platform.example/in/a\n", 422, ingest.CodeInvalidOptions, &at{0, "lookups"}},
		{"oversized multipart file", bigPartType, "", bigPart.String(), 413, ingest.CodeTooLarge, nil},
		{"oversized multipart body", hugeFieldType, "", hugeField.String(), 413, ingest.CodeTooLarge, nil},
		{"bad row in multipart file", badPartType, "", badPart.String(), 422, ingest.CodeInvalidRows, &at{1, "company"}},
		{"multipart without boundary", "multipart/form-data", "", badPart.String(), 400, "malformed_multipart", nil},
		{"unsupported type", "text/plain", "", "profile_url\nhttps://platform.example/in/a\n", 415, "unsupported_media_type", nil},
		{"no content type", "", "", "profile_url\nhttps://platform.example/in/a\n", 415, "unsupported_media_type", nil},
	}
	for _, c := range cases {
		path := "/v1/jobs"
		if c.query != "" {
			path += "?" + c.query
		}
		var header []string
		if c.contentType != "" {
			header = []string{"Content-Type", c.contentType}
		}
		resp, data := b.call(t, http.MethodPost, path, keyA, strings.NewReader(c.body), header...)
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.status, data)
			continue
		}
		e := apiErr(t, data)
		if e.Code != c.code || e.Message == "" {
			t.Errorf("%s: error %+v, want code %s", c.name, e, c.code)
		}
		if c.at != nil && (len(e.Details) == 0 || e.Details[0].Row != c.at.row || e.Details[0].Column != c.at.column) {
			t.Errorf("%s: details %+v, want the first at row %d column %q", c.name, e.Details, c.at.row, c.at.column)
		}
	}
	if jobsN, rowsN := b.counts(t); jobsN != 0 || rowsN != 0 {
		t.Fatalf("rejected uploads stored %d jobs and %d rows", jobsN, rowsN)
	}
}

func TestSubmitKeepsUnknownColumnsAsExtra(t *testing.T) {
	t.Parallel()
	b := setup(t)
	st := b.mustCreate(t, keyA, "", "profile_url,Owner,crm tier\nhttps://platform.example/in/a,kim,42\n")
	res, err := b.Store.ListResults(context.Background(), st.ID, "", 0, 10)
	if err != nil || len(res) != 1 {
		t.Fatalf("results: %v %d", err, len(res))
	}
	if res[0].Extra["Owner"] != "kim" || res[0].Extra["crm tier"] != "42" || len(res[0].Extra) != 2 {
		t.Fatalf("extra = %v", res[0].Extra)
	}
}

// A client that starts an upload and stops sending gets a 408 once the
// idle deadline passes, and nothing is stored.
func TestSubmitStalledUploadTimesOut(t *testing.T) {
	t.Parallel()
	b := setup(t, func(d *deps) { d.UploadIdleTimeout = 300 * time.Millisecond })
	conn, err := net.Dial("tcp", b.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	part := "profile_url\nhttps://platform.example/in/a\n"
	fmt.Fprintf(conn, "POST /v1/jobs HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer %s\r\nContent-Type: text/csv\r\nContent-Length: 100000\r\n\r\n%s", keyA, part)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a failsafe, far beyond the expected answer
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled upload: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("status %d, want 408", resp.StatusCode)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("answered after %s", waited)
	}
	if jobsN, rowsN := b.counts(t); jobsN != 0 || rowsN != 0 {
		t.Fatalf("a stalled upload stored %d jobs and %d rows", jobsN, rowsN)
	}
	if logs := b.logs.String(); !strings.Contains(logs, `"error_code":"request_timeout"`) {
		t.Fatalf("log:\n%s", logs)
	}
}

// The read deadline moves ahead as data arrives, in steps, and never past
// the hard bound.
func TestDeadlineBodyExtends(t *testing.T) {
	t.Parallel()
	w := &deadlineRecorder{ResponseWriter: httptest.NewRecorder()}
	start := time.Now()
	b := &deadlineBody{rc: http.NewResponseController(w), idle: 8 * time.Second, hard: start.Add(20 * time.Second)}
	b.extend(start)
	b.extend(start.Add(500 * time.Millisecond)) // less than idle/8 later: kept
	b.extend(start.Add(2 * time.Second))
	b.extend(start.Add(15 * time.Second)) // capped at hard
	want := []time.Time{start.Add(8 * time.Second), start.Add(10 * time.Second), start.Add(20 * time.Second)}
	if len(w.set) != len(want) {
		t.Fatalf("deadlines %v, want %v", w.set, want)
	}
	for i := range want {
		if !w.set[i].Equal(want[i]) {
			t.Fatalf("deadline %d = %v, want %v", i, w.set[i].Sub(start), want[i].Sub(start))
		}
	}
}

// deadlineRecorder records the read deadlines set through http.ResponseController.
type deadlineRecorder struct {
	http.ResponseWriter
	set []time.Time
}

func (d *deadlineRecorder) SetReadDeadline(t time.Time) error {
	d.set = append(d.set, t)
	return nil
}
