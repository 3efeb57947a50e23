package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/enrichq/enrichq/internal/jobs/jobstest"
)

// A CRM export's headers are matched, --map settles an ambiguity, and the
// estimate says how the file was read.
func TestEstimateCRMExportWithMap(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	file := writeFile(t, "hubspot.csv", "Record ID,Company name,Account Name,Website URL,Industry\n"+
		"1,Acme Holding,Acme GmbH,https://www.acme.de/,Software\n2,Beta,Beta AG,beta.example,Retail\n3,Acme Holding,Acme GmbH,acme.de,Software\n")
	r := cli(t, s.url, "estimate", file, "--roles", "CTO")
	if r.err == nil || !strings.Contains(r.err.Error(), `"Company name" and "Account Name"`) {
		t.Fatalf("ambiguous header:\n%v", r)
	}
	r = cli(t, s.url, "estimate", file, "--roles", "CTO", "--map", "company=Account Name")
	for _, want := range []string{`"Account Name" -> company`, `"Website URL" -> domain`, `"Record ID" -> ref`, "kept as extra: Company name, Industry",
		"rows:     3 lookups (2 distinct) from 3 rows in the file"} {
		if r.err != nil || !strings.Contains(r.stdout, want) {
			t.Fatalf("estimate --map: want %q in\n%v", want, r)
		}
	}
	r = cli(t, s.url, "estimate", file, "--map", "company")
	if exitCode(r.err) != 2 || !strings.Contains(r.err.Error(), "field=Header") {
		t.Fatalf("a --map without =:\n%v", r)
	}
}

// submit takes an .xlsx by its extension.
func TestSubmitXLSXFile(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true})
	f := excelize.NewFile()
	defer f.Close()
	for i, row := range [][]any{{"Organisation", "Domain", "Job Title"}, {"Acme", "acme.com", "CTO"}, {"Beta", "beta.io", "CFO"}} {
		if err := f.SetSheetRow("Sheet1", "A"+string(rune('1'+i)), &row); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "list.xlsx")
	if err := f.SaveAs(path); err != nil {
		t.Fatal(err)
	}
	r := cli(t, s.url, "submit", path)
	if r.err != nil || !strings.Contains(r.stderr, "2 lookups") || !strings.Contains(r.stderr, `"Domain" -> domain`) {
		t.Fatalf("submit .xlsx:\n%v", r)
	}
	jobs, err := s.b.Store.ListJobs(context.Background(), "acme", nil, 10)
	if err != nil || len(jobs) != 1 || jobs[0].SourceFormat != "xlsx" {
		t.Fatalf("jobs %+v, %v: want one of source format xlsx", jobs, err)
	}
	r = cli(t, s.url, "submit", writeFile(t, "old.xls", "x"))
	if exitCode(r.err) != 2 || !strings.Contains(r.err.Error(), "save the sheet as .xlsx") {
		t.Fatalf("an .xls:\n%v", r)
	}
}
