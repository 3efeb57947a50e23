package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest/ingesttest"
	"github.com/enrichq/enrichq/internal/service"
)

// crmExport is a CRM-style export with a duplicate lookup (rows 1 and 3 ask
// the same: CTO at acme.com) and a column kept as extra.
const crmExport = "Record ID;Company Name;Website;Job Title;Email Address;Industry\r\n" +
	"1;Acme GmbH;https://www.acme.de/;CTO;;Software\r\n" +
	"2;Café Crème;;;jane@creme.example;Food\r\n" +
	"3;ACME;acme.de;cto;;Software\r\n"

var crmExportColumns = map[string]string{"Record ID": "ref", "Company Name": "company", "Website": "domain", "Job Title": "role", "Email Address": "email"}

func checkUpload(t *testing.T, what string, u service.UploadFields, rows, distinct int, cols map[string]string, extra string) {
	t.Helper()
	if u.RowsUploaded == nil || *u.RowsUploaded != rows || u.DistinctLookups == nil || *u.DistinctLookups != distinct ||
		fmt.Sprint(u.Columns) != fmt.Sprint(cols) || strings.Join(u.ExtraColumns, ",") != extra {
		t.Fatalf("%s: upload fields %+v (rows %v distinct %v), want %d rows, %d distinct, %v, [%s]", what, u, intOrNil(u.RowsUploaded), intOrNil(u.DistinctLookups), rows, distinct, cols, extra)
	}
}

func intOrNil(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// A Windows-1252, semicolon-separated CRM export goes in as it is; the
// estimate, the answer and the status say how it was read.
func TestSubmitCRMExport(t *testing.T) {
	t.Parallel()
	spool := t.TempDir()
	b := setup(t, func(d *deps) { d.SpoolDir = spool })
	body, err := charmap.Windows1252.NewEncoder().String(crmExport)
	if err != nil {
		t.Fatal(err)
	}
	resp, data := b.submitCSV(t, keyA, "dry_run=true", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dry run: %d %s", resp.StatusCode, data)
	}
	est := decode[estimateBody](t, data)
	checkUpload(t, "estimate", est.UploadFields, 3, 2, crmExportColumns, "Industry")
	if est.Rows != 3 || est.Distinct != 2 {
		t.Fatalf("estimate %+v", est.Estimate)
	}

	st := b.mustCreate(t, keyA, "", body)
	checkUpload(t, "answer", st.UploadFields, 3, 2, crmExportColumns, "Industry")
	resp, data = b.call(t, http.MethodGet, "/v1/jobs/"+st.ID, keyA, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status: %d %s", resp.StatusCode, data)
	}
	checkUpload(t, "status", decode[jobStatus](t, data).UploadFields, 3, 2, crmExportColumns, "Industry")
	res, err := b.Store.ListResults(context.Background(), st.ID, "", 0, 10)
	if err != nil || len(res) != 3 {
		t.Fatalf("results: %v %d", err, len(res))
	}
	if r := res[0]; r.Kind != domain.InputNameDomain || r.Name != "CTO" || r.Domain != "acme.de" || r.Company != "Acme GmbH" || r.Ref != "1" {
		t.Fatalf("row 1: %+v", r)
	}
	if r := res[1]; r.Kind != domain.InputEmail || r.Company != "Café Crème" || r.Extra["Industry"] != "Food" {
		t.Fatalf("row 2: %+v", r)
	}
	resp, data = b.call(t, http.MethodGet, "/v1/jobs/"+st.ID+"/results?format=csv", keyA, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), ",no_match,domain,email_status,Industry\n") || !strings.Contains(string(data), ",acme.de,,Software\n") {
		t.Fatalf("results CSV: %d %s", resp.StatusCode, data)
	}
}

// An ambiguous header is a 422 naming both columns; ?columns= settles it,
// and a mapped header that is not in the file is named.
func TestSubmitColumnsMapping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const csv = "Company Name,Account Name,Title\nAcme Holding,Acme Sales GmbH,CTO\n"
	resp, data := b.submitCSV(t, keyA, "", csv)
	e := apiErr(t, data)
	if resp.StatusCode != http.StatusUnprocessableEntity || len(e.Details) != 1 ||
		!strings.Contains(e.Details[0].Message, `"Company Name" and "Account Name"`) || !strings.Contains(e.Details[0].Message, "columns=company:") {
		t.Fatalf("ambiguous: %d %s", resp.StatusCode, data)
	}
	st := b.mustCreate(t, keyA, "columns="+url.QueryEscape("company:Account Name"), csv)
	checkUpload(t, "mapped", st.UploadFields, 1, 1, map[string]string{"Account Name": "company", "Title": "role"}, "Company Name")

	resp, data = b.submitCSV(t, keyA, "columns="+url.QueryEscape(`{"company":"Firm"}`), csv)
	if e := apiErr(t, data); resp.StatusCode != http.StatusUnprocessableEntity || e.Details[0].Column != "Firm" || !strings.Contains(e.Details[0].Message, "not a column of the file") {
		t.Fatalf("missing header: %d %s", resp.StatusCode, data)
	}
	// JSON: columns take fields from the rows' extra.
	resp, data = b.submitJSON(t, keyA, `{"rows": [{"role": "CFO", "extra": {"Website": "https://Beta.example/", "Tier": "A"}}], "columns": {"domain": "Website"}}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("JSON: %d %s", resp.StatusCode, data)
	}
	checkUpload(t, "JSON", decode[jobStatus](t, data).UploadFields, 1, 1, map[string]string{"Website": "domain"}, "Tier")
	if jobsN, _ := b.counts(t); jobsN != 2 {
		t.Fatalf("%d jobs stored, want 2", jobsN)
	}
}

// An .xlsx goes in raw or as a multipart file; its spool is gone after the
// request, accepted or not.
func TestSubmitXLSX(t *testing.T) {
	t.Parallel()
	spool := t.TempDir()
	b := setup(t, func(d *deps) { d.SpoolDir = spool })
	book := ingesttest.XLSX(t, [][]any{
		{"Company Name", "Website", "LinkedIn URL", "Notes"},
		{"Acme", "acme.com", nil, "vip"},
		{"Beta", nil, "https://platform.example/in/jane-doe", nil},
	})
	resp, data := b.call(t, http.MethodPost, "/v1/jobs?roles=CTO", keyA, bytes.NewReader(book), "Content-Type", mediaXLSX)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("xlsx: %d %s", resp.StatusCode, data)
	}
	st := decode[jobStatus](t, data)
	checkUpload(t, "xlsx", st.UploadFields, 2, 2, map[string]string{"Company Name": "company", "Website": "domain", "LinkedIn URL": "profile_url"}, "Notes")

	ct, body := multipartBody(t, nil, "accounts.xlsx", string(book))
	resp, data = b.call(t, http.MethodPost, "/v1/jobs?dry_run=true&roles=CTO,CFO", keyA, body, "Content-Type", ct)
	if est := decode[estimateBody](t, data); resp.StatusCode != http.StatusOK || est.Rows != 3 || *est.RowsUploaded != 2 {
		t.Fatalf("multipart xlsx dry run: %d %s", resp.StatusCode, data)
	}

	bad := ingesttest.XLSX(t, [][]any{{"Company", "Website"}, {"Acme", "192.168.0.1"}})
	resp, data = b.call(t, http.MethodPost, "/v1/jobs?roles=CTO", keyA, bytes.NewReader(bad), "Content-Type", mediaXLSX)
	if e := apiErr(t, data); resp.StatusCode != http.StatusUnprocessableEntity || e.Details[0].Row != 1 || e.Details[0].Column != "Website" {
		t.Fatalf("bad row: %d %s", resp.StatusCode, data)
	}
	resp, data = b.call(t, http.MethodPost, "/v1/jobs", keyA, strings.NewReader("Company\nAcme\n"), "Content-Type", mediaXLSX)
	if e := apiErr(t, data); resp.StatusCode != http.StatusBadRequest || e.Code != "malformed_xlsx" {
		t.Fatalf("not a workbook: %d %s", resp.StatusCode, data)
	}
	b2 := setup(t, func(d *deps) { d.SpoolDir = spool; d.svc.Limits.MaxBytes = 1000 })
	resp, data = b2.call(t, http.MethodPost, "/v1/jobs", keyA, bytes.NewReader(book), "Content-Type", mediaXLSX)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("over the byte limit: %d %s", resp.StatusCode, data)
	}
	left, _ := filepath.Glob(filepath.Join(spool, "*"))
	if len(left) != 0 {
		t.Fatalf("spooled files left: %v", left)
	}
	if _, err := os.Stat(spool); err != nil {
		t.Fatal(err)
	}
}

// A TSV by its content type, a semicolon CSV by sniffing, UTF-16 by its BOM.
func TestSubmitTextFormats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, data := b.call(t, http.MethodPost, "/v1/jobs", keyA, strings.NewReader("Full Name\tEmployer\nJane Doe\tAcme, Inc.\n"), "Content-Type", mediaTSV)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("tsv: %d %s", resp.StatusCode, data)
	}
	u16 := []byte{0xFF, 0xFE}
	for _, r := range "email\r\njane@acme.example\r\n" {
		u16 = append(u16, byte(r), 0)
	}
	ct, body := multipartBody(t, nil, "export.csv", string(u16))
	resp, data = b.call(t, http.MethodPost, "/v1/jobs", keyA, body, "Content-Type", ct)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("utf-16: %d %s", resp.StatusCode, data)
	}
	resp, data = b.submitCSV(t, keyA, "encoding=ebcdic", "email\nj@a.example\n")
	if e := apiErr(t, data); resp.StatusCode != http.StatusUnprocessableEntity || e.Details[0].Column != "encoding" {
		t.Fatalf("unknown encoding: %d %s", resp.StatusCode, data)
	}
}
