package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/service"
)

// A download gives every line once, in row order, in each format (json
// with all=true too), after a cursor when given, and is one line of the
// audit log with the lines it gave.
func TestResultsDownloadEveryLineOnceInEachFormat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 2*resultsPage + 17
	var sb strings.Builder
	sb.WriteString("profile_url,n\n")
	for i := range n {
		fmt.Fprintf(&sb, "https://platform.example/in/p%d,%d\n", i, i)
	}
	job := b.mustCreate(t, keyA, "", sb.String())
	path := "/v1/jobs/" + job.ID + "/results?"

	check := func(format string, rows []int, extras []string, first int) {
		t.Helper()
		if len(rows) != n-first+1 {
			t.Fatalf("%s: %d lines, want %d", format, len(rows), n-first+1)
		}
		for i, row := range rows {
			if row != first+i || extras[i] != strconv.Itoa(first+i-1) {
				t.Fatalf("%s: line %d is row %d (extra n %q), want row %d", format, i, row, extras[i], first+i)
			}
		}
	}
	resp, data := b.call(t, http.MethodGet, path+"format=json&all=true", keyA, nil)
	page := decode[resultsPageJSON](t, data)
	if resp.StatusCode != http.StatusOK || page.NextCursor != nil {
		t.Fatalf("json all=true: %d, next_cursor %v", resp.StatusCode, page.NextCursor)
	}
	var rows []int
	var extras []string
	for _, l := range page.Results {
		rows, extras = append(rows, l.Row), append(extras, l.Extra["n"])
	}
	check("json", rows, extras, 1)

	for _, q := range []string{"format=ndjson", "format=ndjson&all=true"} {
		_, data = b.call(t, http.MethodGet, path+q, keyA, nil)
		rows, extras = nil, nil
		for _, l := range ndjsonLines(t, data) {
			rows, extras = append(rows, l.Row), append(extras, l.Extra["n"])
		}
		check(q, rows, extras, 1)
	}

	_, data = b.call(t, http.MethodGet, path+"format=csv&all=true", keyA, nil)
	recs := csvRecords(t, data)
	if got := recs[0][len(recs[0])-1]; got != "n" {
		t.Fatalf("csv header ends with %q, want the extra column n", got)
	}
	rows, extras = nil, nil
	for _, rec := range recs[1:] {
		row, _ := strconv.Atoi(rec[0])
		rows, extras = append(rows, row), append(extras, rec[len(rec)-1])
	}
	check("csv", rows, extras, 1)

	// After the cursor of a page: the rest, once.
	resp, _ = b.call(t, http.MethodGet, path+"format=ndjson&limit=1500", keyA, nil)
	next := resp.Header.Get("X-Next-Cursor")
	_, data = b.call(t, http.MethodGet, path+"format=json&all=true&cursor="+url.QueryEscape(next), keyA, nil)
	rows, extras = nil, nil
	for _, l := range decode[resultsPageJSON](t, data).Results {
		rows, extras = append(rows, l.Row), append(extras, l.Extra["n"])
	}
	check("json after the cursor", rows, extras, 1501)

	// One audit line a download, with its lines.
	_, data = b.call(t, http.MethodGet, "/v1/audit?limit=1000", keyA, nil)
	var got []int64
	for _, l := range decode[struct{ Lines []service.AuditLine }](t, data).Lines {
		if l.Action == "results_download" && l.Subject == job.ID {
			got = append(got, l.Rows)
		}
	}
	want := []int64{n, n, n, n, 1500, n - 1500}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audit lines of the downloads: rows %v, want %v", got, want)
	}

	for q, param := range map[string]string{"all=yes": "all", "all=true&limit=5": "limit"} {
		resp, data := b.call(t, http.MethodGet, path+q, keyA, nil)
		if e := apiErr(t, data); resp.StatusCode != http.StatusBadRequest || len(e.Details) != 1 || e.Details[0].Column != param {
			t.Errorf("?%s: %d %s", q, resp.StatusCode, data)
		}
	}
	// Another tenant's job is not found, before anything is streamed.
	if resp, _ := b.call(t, http.MethodGet, path+"format=csv", keyB, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another tenant's download: %d", resp.StatusCode)
	}
}
