package httpapi

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// resultsJob submits a job of three rows and records a match (with
// formula-looking values), a no-match and a failure for them.
func resultsJob(t *testing.T, b *bundle) string {
	t.Helper()
	job := b.mustCreate(t, keyA, "lookups=profile,email,phone",
		"ref,profile_url,name,company,email,crm_id,note\n"+
			"r1,https://platform.example/in/alice,,,,\"=HYPERLINK(\"\"http://evil.example\"\")\",hello\n"+
			"r2,,Bob Roe,Beta AG,,42,\n"+
			"r3,,,,carol@example.com,43,@risky\n")
	finishRows(t, b.Store, tenantA, job.ID, func(i int, r store.Row) store.Outcome {
		switch i {
		case 0:
			url := "https://platform.example/in/alice"
			return store.Outcome{
				State: domain.RowMatched, StagesDone: []domain.Stage{domain.StageProfile, domain.StageEmail, domain.StagePhone}, AnyMatch: true,
				Profile: &store.ProfileResult{ProfileURL: url, Name: "Alice Doe", Headline: "-1 growth hacker", Company: "Acme",
					Role: "CTO", Location: "Berlin", Industry: "Software", Technographics: []string{"go", "postgres"}, Raw: []byte(`{}`)},
				Email: &store.EmailResult{ProfileURL: url, Email: "alice@acme.example", Confidence: 0.9, Verified: true, Raw: []byte(`{}`)},
				Phone: &store.PhoneResult{ProfileURL: url, Phones: []byte(`[{"number": "+49 30 1234", "type": "work"}, {"number": "030 99", "type": "mobile"}]`),
					PrimaryNumber: "+49 30 1234", Raw: []byte(`{}`)},
			}
		case 1:
			return store.Outcome{State: domain.RowNoMatch, NoMatches: []domain.Stage{domain.StageProfile}, StagesDone: []domain.Stage{domain.StageProfile}}
		default:
			return store.Outcome{State: domain.RowFailed, Reason: "attempts exhausted", LastError: "vendor: 500", FailedAttempt: true}
		}
	})
	return job.ID
}

func TestResultsJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := resultsJob(t, b)
	resp, data := b.call(t, http.MethodGet, "/v1/jobs/"+id+"/results", keyA, nil)
	page := decode[resultsPageJSON](t, data)
	if resp.StatusCode != http.StatusOK || len(page.Results) != 3 || page.NextCursor != nil {
		t.Fatalf("results: %d %s", resp.StatusCode, data)
	}
	a, bob, carol := page.Results[0], page.Results[1], page.Results[2]
	if a.Row != 1 || a.Ref != "r1" || a.State != domain.RowMatched || deref(a.FullName) != "Alice Doe" || deref(a.CurrentRole) != "CTO" ||
		deref(a.FoundProfileURL) != "https://platform.example/in/alice" || deref(a.Email) != "alice@acme.example" ||
		a.EmailConfidence == nil || a.EmailConfidence.String() != "0.9" || a.EmailVerified == nil || !*a.EmailVerified ||
		strings.Join(a.Technographics, ",") != "go,postgres" || a.Extra["crm_id"] != `=HYPERLINK("http://evil.example")` || len(a.NoMatch) != 0 {
		t.Errorf("row 1 = %s", mustJSON(a))
	}
	var phones []map[string]string
	if err := json.Unmarshal(a.Phones, &phones); err != nil || len(phones) != 2 || phones[0]["number"] != "+49 30 1234" {
		t.Errorf("phones = %s", a.Phones)
	}
	if bob.State != domain.RowNoMatch || bob.Name != "Bob Roe" || bob.Company != "Beta AG" || bob.FullName != nil || bob.Email != nil ||
		string(bob.Phones) != "null" || joinStages(bob.NoMatch, ",") != "profile" {
		t.Errorf("row 2 = %s", mustJSON(bob))
	}
	if carol.State != domain.RowFailed || carol.Reason != "attempts exhausted: vendor: 500" || carol.InputEmail != "carol@example.com" {
		t.Errorf("row 3 = %s", mustJSON(carol))
	}
	// Absent values are null, and every key is there.
	raw := decode[struct{ Results []map[string]any }](t, data).Results[1]
	for _, k := range []string{"full_name", "email", "email_confidence", "email_verified", "phones", "technographics"} {
		if v, ok := raw[k]; !ok || v != nil {
			t.Errorf("row 2: %s = %v (present %v), want null", k, v, ok)
		}
	}

	// Pages with a cursor, and a state filter.
	resp, data = b.call(t, http.MethodGet, "/v1/jobs/"+id+"/results?limit=2", keyA, nil)
	page = decode[resultsPageJSON](t, data)
	if len(page.Results) != 2 || page.NextCursor == nil || resp.Header.Get("X-Next-Cursor") != *page.NextCursor {
		t.Fatalf("page 1: %s %v", data, resp.Header)
	}
	_, data = b.call(t, http.MethodGet, "/v1/jobs/"+id+"/results?limit=2&cursor="+url.QueryEscape(*page.NextCursor), keyA, nil)
	if page = decode[resultsPageJSON](t, data); len(page.Results) != 1 || page.Results[0].Ref != "r3" || page.NextCursor != nil {
		t.Fatalf("page 2: %s", data)
	}
	_, data = b.call(t, http.MethodGet, "/v1/jobs/"+id+"/results?state=no_match", keyA, nil)
	if page = decode[resultsPageJSON](t, data); len(page.Results) != 1 || page.Results[0].Ref != "r2" {
		t.Fatalf("state=no_match: %s", data)
	}
	_, data = b.call(t, http.MethodGet, "/v1/jobs/"+id+"/results?state=pending", keyA, nil)
	if raw := decode[map[string]any](t, data); len(raw["results"].([]any)) != 0 {
		t.Fatalf("state=pending: %s", data)
	}
}

func TestResultsNDJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := resultsJob(t, b)
	resp, data := b.call(t, http.MethodGet, "/v1/jobs/"+id+"/results?format=ndjson", keyA, nil)
	lines := ndjsonLines(t, data)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" || len(lines) != 3 ||
		resp.Header.Get("X-Next-Cursor") != "" {
		t.Fatalf("ndjson: %d %v %s", resp.StatusCode, resp.Header, data)
	}
	for i, l := range lines {
		if l.Row != i+1 {
			t.Errorf("line %d is row %d", i, l.Row)
		}
	}
	resp, data = b.call(t, http.MethodGet, "/v1/jobs/"+id+"/results?format=ndjson&limit=1", keyA, nil)
	next := resp.Header.Get("X-Next-Cursor")
	if lines := ndjsonLines(t, data); len(lines) != 1 || next == "" {
		t.Fatalf("ndjson limit=1: %v %s", resp.Header, data)
	}
	_, data = b.call(t, http.MethodGet, "/v1/jobs/"+id+"/results?format=ndjson&cursor="+url.QueryEscape(next), keyA, nil)
	if lines := ndjsonLines(t, data); len(lines) != 2 || lines[0].Ref != "r2" {
		t.Fatalf("ndjson after the cursor: %s", data)
	}
}

func ndjsonLines(t *testing.T, data []byte) []resultLine {
	t.Helper()
	var out []resultLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, decode[resultLine](t, sc.Bytes()))
	}
	return out
}

func TestResultsCSV(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := resultsJob(t, b)
	resp, data := b.call(t, http.MethodGet, "/v1/jobs/"+id+"/results?format=csv", keyA, nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: %d %v %s", resp.StatusCode, resp.Header, data)
	}
	recs := csvRecords(t, data)
	if len(recs) != 4 {
		t.Fatalf("%d records, want a header and 3 rows:\n%s", len(recs), data)
	}
	wantHeader := append(slices.Clone(resultColumns), "crm_id", "note")
	if !slices.Equal(recs[0], wantHeader) {
		t.Fatalf("header %v, want %v", recs[0], wantHeader)
	}
	cell := func(row int, col string) string { return recs[row][slices.Index(recs[0], col)] }
	for _, c := range []struct {
		row       int
		col, want string
	}{
		{1, "crm_id", `'=HYPERLINK("http://evil.example")`}, // formulas are defused
		{1, "headline", "'-1 growth hacker"},
		{1, "phones", "'+49 30 1234;030 99"},
		{1, "note", "hello"},
		{1, "full_name", "Alice Doe"},
		{1, "email", "alice@acme.example"},
		{1, "email_confidence", "0.9"},
		{1, "email_verified", "true"},
		{1, "technographics", "go;postgres"},
		{2, "no_match", "profile"},
		{2, "email_verified", ""},
		{2, "crm_id", "42"},
		{3, "note", "'@risky"},
		{3, "input_email", "carol@example.com"},
		{3, "reason", "attempts exhausted: vendor: 500"},
	} {
		if got := cell(c.row, c.col); got != c.want {
			t.Errorf("row %d %s = %q, want %q", c.row, c.col, got, c.want)
		}
	}
	// A limited page says where the next starts; its extra columns come from the page.
	resp, data = b.call(t, http.MethodGet, "/v1/jobs/"+id+"/results?format=csv&limit=1&state=no_match", keyA, nil)
	if recs := csvRecords(t, data); len(recs) != 2 || resp.Header.Get("X-Next-Cursor") != "" || recs[1][1] != "r2" {
		t.Fatalf("csv state=no_match: %v %s", resp.Header, data)
	}
	resp, _ = b.call(t, http.MethodGet, "/v1/jobs/"+id+"/results?format=csv&limit=2", keyA, nil)
	if resp.Header.Get("X-Next-Cursor") == "" {
		t.Fatalf("csv limit=2: no X-Next-Cursor")
	}
}

func csvRecords(t *testing.T, data []byte) [][]string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatalf("parse CSV: %v\n%s", err, data)
	}
	return recs
}

func TestResultsStreamEveryPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 2*resultsPage + 17
	var sb strings.Builder
	sb.WriteString("profile_url,n\n")
	for i := range n {
		fmt.Fprintf(&sb, "https://platform.example/in/p%d,%d\n", i, i)
	}
	job := b.mustCreate(t, keyA, "", sb.String())
	_, data := b.call(t, http.MethodGet, "/v1/jobs/"+job.ID+"/results?format=ndjson", keyA, nil)
	lines := ndjsonLines(t, data)
	if len(lines) != n || lines[n-1].Row != n || lines[n-1].Extra["n"] != fmt.Sprint(n-1) {
		t.Fatalf("ndjson streamed %d lines, want %d", len(lines), n)
	}
	_, data = b.call(t, http.MethodGet, "/v1/jobs/"+job.ID+"/results?format=csv", keyA, nil)
	if recs := csvRecords(t, data); len(recs) != n+1 || recs[n][len(recs[n])-1] != fmt.Sprint(n-1) {
		t.Fatalf("csv streamed %d records, want %d", len(recs), n+1)
	}
	// JSON stops at its default page.
	_, data = b.call(t, http.MethodGet, "/v1/jobs/"+job.ID+"/results", keyA, nil)
	if page := decode[resultsPageJSON](t, data); len(page.Results) != defaultResultsLimit || page.NextCursor == nil {
		t.Fatalf("json: %d results", len(page.Results))
	}
}

func TestResultsBadParameters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := b.mustCreate(t, keyA, "", oneRow)
	for q, param := range map[string]string{
		"format=xml":         "format",
		"state=done":         "state",
		"cursor=zzz":         "cursor",
		"cursor=LTE":         "cursor", // "-1"
		"limit=-5":           "limit",
		"format=csv&limit=x": "limit",
	} {
		resp, data := b.call(t, http.MethodGet, "/v1/jobs/"+job.ID+"/results?"+q, keyA, nil)
		e := apiErr(t, data)
		if resp.StatusCode != http.StatusBadRequest || e.Code != "invalid_parameter" || len(e.Details) != 1 || e.Details[0].Column != param {
			t.Errorf("?%s: %d %s", q, resp.StatusCode, data)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
