package main

import (
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/jobs/jobstest"
)

// A list uploaded once is estimated and submitted by its id, with the
// answers of the file itself; a file's reading flags stay with the upload.
func TestUploadThenEstimateAndSubmit(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	file := writeFile(t, "accounts.csv", "Account,Website,owner\nAcme AG,acme.example,o1\nBeta AG,beta.example,o2\n")
	r := cli(t, s.url, "upload", file, "--map", "company=Account")
	id := strings.TrimSpace(r.stdout)
	if r.err != nil || len(id) != 36 || !strings.Contains(r.stderr, "2 rows, 2 company-only rows that need --roles") ||
		!strings.Contains(r.stderr, `"Account" -> company`) {
		t.Fatalf("upload:\n%v", r)
	}

	inline := cli(t, s.url, "estimate", file, "--map", "company=Account", "--roles", "CTO,CFO", "--lookups", "profile,email")
	byID := cli(t, s.url, "estimate", "--upload", id, "--roles", "CTO,CFO", "--lookups", "profile,email")
	if inline.err != nil || byID.err != nil || byID.stdout != inline.stdout || !strings.Contains(byID.stdout, "rows:     4 lookups") {
		t.Fatalf("estimate by id:\n%v\ninline:\n%v", byID, inline)
	}

	r = cli(t, s.url, "submit", "--upload", id, "--roles", "CTO,CFO", "--budget", "50")
	if r.err != nil || len(strings.TrimSpace(r.stdout)) != 36 || !strings.Contains(r.stderr, "4 lookups") {
		t.Fatalf("submit by id:\n%v", r)
	}

	for _, args := range [][]string{
		{"submit", file, "--upload", id},
		{"estimate", "--upload", id, "--map", "company=Website"},
		{"upload", file, "--roles", "CTO"},
		{"submit"},
	} {
		if r := cli(t, s.url, args...); exitCode(r.err) != 2 {
			t.Errorf("%v: exit %d, want 2\n%v", args, exitCode(r.err), r)
		}
	}
	if r := cli(t, s.url, "submit", "--upload", "00000000-0000-0000-0000-000000000000", "--roles", "CTO"); exitCode(r.err) != 1 ||
		!strings.Contains(r.err.Error(), "no upload") {
		t.Fatalf("unknown upload:\n%v", r)
	}
}
