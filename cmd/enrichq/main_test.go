package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/apitest"
	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

const apiKey = "cli-test-key-0001"

// stack is a running API with workers, the fake vendor and a scheduler, on
// real Postgres and Redis.
type stack struct {
	url string
	b   *jobstest.Bundle
	api *httptest.Server
}

func newStack(t *testing.T, o jobstest.Options) *stack {
	t.Helper()
	api := apitest.Start(t, apitest.Options{Pipeline: o, Static: map[string]string{apiKey: "acme"}, Scheduler: true,
		Deps: func(d *httpapi.Deps) { d.MCPMaxBudget = mcpCeiling }})
	return &stack{url: api.URL, b: api.Bundle, api: api.API}
}

// result is what one run of the command printed and returned.
type result struct {
	stdout, stderr string
	err            error
}

func (r result) String() string {
	return fmt.Sprintf("err: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
}

// cli runs the command line with the API's URL and key in the environment.
func cli(t *testing.T, apiURL string, args ...string) result {
	t.Helper()
	env := map[string]string{"ENRICHQ_API_URL": apiURL, "ENRICHQ_API_KEY": apiKey}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err := run(ctx, append([]string{"enrichq"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
	return result{stdout.String(), stderr.String(), err}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSubmitWaitThenResults(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{})
	file := writeFile(t, "companies.csv", apitest.CompaniesCSV(40))

	r := cli(t, s.url, "submit", file, "--roles", "VP Sales", "--lookups", "profile,email", "--budget", "100000",
		"--name", "cli test", "--wait", "--interval", "50ms")
	if r.err != nil {
		t.Fatalf("submit --wait failed:\n%v", r)
	}
	id := strings.TrimSpace(r.stdout)
	if strings.Count(r.stdout, "\n") != 1 || len(id) != 36 {
		t.Fatalf("stdout is not the job id alone:\n%v", r)
	}
	// stderr: progress lines (not a terminal: plain), then the summary.
	for _, want := range []string{"submitted job " + id + ": 40 lookups", "rows done", "job " + id + " completed after", "40 of 40 rows done", "credits spent of a budget of 100000",
		"enrichq results " + id} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	job, err := s.b.Store.GetJob(context.Background(), "acme", id)
	if err != nil || job.State != "completed" || job.Name != "cli test" || *job.BudgetCredits != 100000 {
		t.Fatalf("job %+v, err %v", job, err)
	}

	// results --format csv: the CSV, on stdout only.
	r = cli(t, s.url, "results", id, "--format", "csv")
	if r.err != nil || r.stderr != "" {
		t.Fatalf("results:\n%v", r)
	}
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatalf("results are not CSV: %v\n%s", err, r.stdout)
	}
	if len(recs) != 41 || recs[0][0] != "row" || recs[0][1] != "ref" || recs[0][len(recs[0])-1] != "owner" {
		t.Fatalf("%d CSV records, header %v", len(recs), recs[0])
	}
	for _, rec := range recs[1:] {
		if st := rec[7]; st != "matched" && st != "no_match" {
			t.Fatalf("line in state %q: %v", st, rec)
		}
	}
	// ndjson and json carry the same lines.
	r = cli(t, s.url, "results", id, "--format", "ndjson", "--state", "matched")
	matched := strings.Count(r.stdout, "\n")
	if r.err != nil || matched == 0 || matched >= 40 {
		t.Fatalf("ndjson of matched lines: %d lines\n%v", matched, r)
	}
	r = cli(t, s.url, "results", id, "--format", "json")
	var lines []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &lines); err != nil || len(lines) != 40 {
		t.Fatalf("json: %d lines, err %v\n%v", len(lines), err, r)
	}

	// status, list and feed see the job.
	r = cli(t, s.url, "status", id)
	if r.err != nil || !strings.Contains(r.stdout, "completed") || !strings.Contains(r.stdout, "40 of 40 done") {
		t.Fatalf("status:\n%v", r)
	}
	r = cli(t, s.url, "status", id, "--json")
	var st jobStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.ID != id || st.State != "completed" {
		t.Fatalf("status --json: %v\n%v", err, r)
	}
	r = cli(t, s.url, "list", "--limit", "5")
	if r.err != nil || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "cli test") {
		t.Fatalf("list:\n%v", r)
	}
	r = cli(t, s.url, "feed", "--since", "0")
	if r.err != nil || strings.Count(r.stdout, "\n") < 40 || !strings.Contains(r.stderr, "next: enrichq feed --since ") {
		t.Fatalf("feed:\n%v", r)
	}

	// audit shows the reads above: the results downloads and the feed read, by this key.
	r = cli(t, s.url, "audit")
	if r.err != nil || !strings.Contains(r.stdout, "results_download") || !strings.Contains(r.stdout, "feed_read") ||
		!strings.Contains(r.stdout, id) || !strings.Contains(r.stderr, "next: enrichq audit --since ") {
		t.Fatalf("audit:\n%v", r)
	}
	r = cli(t, s.url, "audit", "--json", "--max", "1")
	var line struct{ Seq int64 }
	if err := json.Unmarshal([]byte(r.stdout), &line); r.err != nil || err != nil || line.Seq != 1 {
		t.Fatalf("audit --json --max 1: %v\n%v", err, r)
	}

	// A finished job cannot be canceled: the server's reason, exit 1.
	r = cli(t, s.url, "cancel", id)
	if exitCode(r.err) != 1 || !strings.Contains(r.err.Error(), "already completed") {
		t.Fatalf("cancel of a completed job:\n%v", r)
	}
}

func TestSubmitWaitJSONAndBar(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{})
	file := writeFile(t, "people.csv", "ref,profile_url\na,https://platform.example/in/ann\nb,https://platform.example/in/bob\n")
	r := cli(t, s.url, "submit", file, "--wait", "--json", "--progress", "bar", "--interval", "50ms")
	if r.err != nil {
		t.Fatalf("submit --wait --json:\n%v", r)
	}
	var st jobStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.State != "completed" || st.Rows.Total != 2 {
		t.Fatalf("stdout is not the final status: %v\n%v", err, r)
	}
	if !strings.Contains(r.stderr, "2/2") || !strings.Contains(r.stderr, "completed") {
		t.Fatalf("no progress bar on stderr:\n%v", r)
	}
}

func TestSubmitWaitPausedJobFails(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{})
	file := writeFile(t, "companies.csv", apitest.CompaniesCSV(10))
	r := cli(t, s.url, "submit", file, "--roles", "VP Sales", "--budget", "1", "--wait", "--interval", "50ms")
	if exitCode(r.err) != 1 || !strings.Contains(r.err.Error(), " paused: ") || !strings.Contains(r.err.Error(), "budget") {
		t.Fatalf("a job paused by its budget:\n%v", r)
	}
	id := strings.TrimSpace(r.stdout)
	if len(id) != 36 || !strings.Contains(r.stderr, "job "+id+" paused after") {
		t.Fatalf("want the id on stdout and the summary on stderr:\n%v", r)
	}
}

func TestSubmitBadFile(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	file := writeFile(t, "bad.csv", "ref,profile_url\nr1,https://platform.example/in/a\nr2,ftp://platform.example/in/b\n")
	r := cli(t, s.url, "submit", file, "--wait")
	if exitCode(r.err) != 1 || r.stdout != "" {
		t.Fatalf("bad file:\n%v", r)
	}
	msg := r.err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "bad.csv refused: 422 invalid_rows") || !strings.Contains(msg, "row 2, column profile_url: ") {
		t.Fatalf("want one line with the server's row and column: %q", msg)
	}
	if n, _ := storetest.JobsAndRows(t, s.b.Store); n != 0 {
		t.Fatalf("%d jobs stored", n)
	}

	// An option the server refuses, also one line.
	r = cli(t, s.url, "submit", writeFile(t, "ok.csv", "profile_url\nhttps://platform.example/in/a\n"), "--lookups", "profile,fax")
	if exitCode(r.err) != 1 || !strings.Contains(r.err.Error(), "422 invalid_options") || !strings.Contains(r.err.Error(), "column lookups: ") {
		t.Fatalf("bad option:\n%v", r)
	}
}

func TestSubmitWithoutWaitAndCancel(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	r := cli(t, s.url, "submit", writeFile(t, "c.csv", apitest.CompaniesCSV(5)), "--roles", "CTO,CFO", "--idempotency-key", "k-1")
	id := strings.TrimSpace(r.stdout)
	if r.err != nil || len(id) != 36 || !strings.Contains(r.stderr, "10 lookups") {
		t.Fatalf("submit:\n%v", r)
	}
	again := cli(t, s.url, "submit", writeFile(t, "c.csv", apitest.CompaniesCSV(5)), "--roles", "CTO,CFO", "--idempotency-key", "k-1")
	if again.err != nil || strings.TrimSpace(again.stdout) != id || !strings.Contains(again.stderr, "submitted before") {
		t.Fatalf("replay:\n%v", again)
	}
	r = cli(t, s.url, "cancel", id)
	if r.err != nil || !strings.Contains(r.stderr, "canceled: 10 rows skipped") {
		t.Fatalf("cancel:\n%v", r)
	}
}

func TestEstimate(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	file := writeFile(t, "companies.csv", apitest.CompaniesCSV(10))
	r := cli(t, s.url, "estimate", file, "--roles", "VP Sales", "--lookups", "profile,email", "--budget", "1")
	if r.err != nil || !strings.Contains(r.stdout, "rows:     10 lookups") || !strings.Contains(r.stdout, "credits:  ") ||
		!strings.Contains(r.stdout, "the job would pause") {
		t.Fatalf("estimate:\n%v", r)
	}
	if n, _ := storetest.JobsAndRows(t, s.b.Store); n != 0 {
		t.Fatalf("an estimate stored %d jobs", n)
	}
	// verify with no vendor that verifies: the API's reason, exit 1.
	r = cli(t, s.url, "estimate", file, "--roles", "VP Sales", "--lookups", "email,verify")
	if exitCode(r.err) != 1 || !strings.Contains(r.err.Error()+r.stderr, "none of the job's vendors verifies emails") {
		t.Fatalf("estimate with verify and no verifier:\n%v", r)
	}
	r = cli(t, s.url, "estimate", file, "--roles", "VP Sales", "--json")
	var est map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &est); err != nil || est["dry_run"] != true || est["rows"] != 10.0 {
		t.Fatalf("estimate --json: %v\n%v", err, r)
	}

	// An API without dry runs refuses the parameter: one line, exit 1.
	for _, status := range []int{http.StatusBadRequest, http.StatusUnprocessableEntity} {
		old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprint(w, `{"error": {"code": "invalid_options", "message": "the job options are invalid", "details": [{"row": 0, "column": "dry_run", "message": "unknown parameter \"dry_run\""}]}}`)
		}))
		r = cli(t, old.URL, "estimate", file)
		old.Close()
		if exitCode(r.err) != 1 || !strings.Contains(r.err.Error(), "cannot estimate (it does not know dry_run)") || strings.Contains(r.err.Error(), "\n") {
			t.Fatalf("old API (%d):\n%v", status, r)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "x.csv", "profile_url\nhttps://platform.example/in/a\n")
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"submit"},
		{"submit", file, "extra"},
		{"submit", file, "--budget", "lots"},
		{"submit", file, "--nope"},
		{"submit", file, "--wait", "--progress", "fancy"},
		{"submit", "x.json"},
		{"results", "not-a-job"},
		{"results", "0b9f6a52-4f6e-4c53-9d38-0a4b1b7e5a10", "--format", "xml"},
		{"list", "--limit", "0"},
		{"--api", "ftp://x", "list"},
	} {
		r := cli(t, "http://127.0.0.1:1", args...)
		if exitCode(r.err) != 2 {
			t.Errorf("%q: exit %d, want 2\n%v", args, exitCode(r.err), r)
		}
	}
	// No key anywhere.
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"enrichq", "list"}, func(string) string { return "" }, nil, &stderr, &stderr)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "ENRICHQ_API_KEY") {
		t.Errorf("no key: %v", err)
	}
	// Help is no failure.
	for _, args := range [][]string{{"help"}, {"-h"}, {"submit", "-h"}, {"help", "results"}} {
		r := cli(t, "http://127.0.0.1:1", args...)
		if r.err != nil || !strings.Contains(r.stdout, "Usage") {
			t.Errorf("%q:\n%v", args, r)
		}
	}
	// An API that does not answer: exit 1, one line.
	r := cli(t, "http://127.0.0.1:1", "list")
	if exitCode(r.err) != 1 || !strings.Contains(r.err.Error(), "cannot reach the API at http://127.0.0.1:1") {
		t.Errorf("unreachable API:\n%v", r)
	}
	// The flags can come before the command too.
	r = cli(t, "http://127.0.0.1:9", "--api", "http://127.0.0.1:1", "--key", "k", "status", "0b9f6a52-4f6e-4c53-9d38-0a4b1b7e5a10")
	if exitCode(r.err) != 1 || !strings.Contains(r.err.Error(), "http://127.0.0.1:1") {
		t.Errorf("--api before the command:\n%v", r)
	}
}

func TestInterruptedWait(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true}) // the job never moves
	file := writeFile(t, "x.csv", "profile_url\nhttps://platform.example/in/a\n")
	env := map[string]string{"ENRICHQ_API_URL": s.url, "ENRICHQ_API_KEY": apiKey}
	// The user interrupts once the job is submitted (its id on stdout), however
	// long the submit took.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	out := writerFunc(func(p []byte) (int, error) {
		n, err := stdout.Write(p)
		if strings.Contains(stdout.String(), "\n") {
			cancel()
		}
		return n, err
	})
	err := run(ctx, []string{"enrichq", "submit", file, "--wait", "--interval", "20ms"}, func(k string) string { return env[k] }, nil, out, &stderr)
	if exitCode(err) != 1 && exitCode(err) != 130 {
		t.Fatalf("exit %d: %v", exitCode(err), err)
	}
	if !strings.Contains(stderr.String(), "stopped waiting; job ") || len(strings.TrimSpace(stdout.String())) != 36 {
		t.Fatalf("stdout %q, stderr:\n%s", stdout.String(), stderr.String())
	}
}

// writerFunc is an io.Writer of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
