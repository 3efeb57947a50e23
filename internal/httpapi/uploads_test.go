package httpapi

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"

	"github.com/enrichq/enrichq/internal/service"
)

// A CRM export uploaded once (multipart, in Windows-1252, with a mapping)
// is shown, estimated and submitted by its id with the answers of the same
// file sent inline; another tenant finds none of it; DELETE removes it.
func TestUploadRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	file, err := charmap.Windows1252.NewEncoder().String(crmExport)
	if err != nil {
		t.Fatal(err)
	}
	ct, body := multipartBody(t, nil, "accounts.csv", file)
	resp, data := b.call(t, http.MethodPost, "/v1/uploads?encoding=windows-1252", keyA, body, "Content-Type", ct)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %d %s", resp.StatusCode, data)
	}
	up := decode[service.Upload](t, data)
	if resp.Header.Get("Location") != "/v1/uploads/"+up.ID || up.Filename != "accounts.csv" || up.Rows != 3 ||
		up.LookupsWithoutRoles == nil || *up.LookupsWithoutRoles != 3 || !reflect.DeepEqual(up.Columns, crmExportColumns) {
		t.Fatalf("upload: %s %s", resp.Header.Get("Location"), data)
	}
	resp, data = b.call(t, http.MethodGet, "/v1/uploads/"+up.ID, keyA, nil)
	if resp.StatusCode != http.StatusOK || decode[service.Upload](t, data).ID != up.ID {
		t.Fatalf("get: %d %s", resp.StatusCode, data)
	}

	byID := `{"upload_id": "` + up.ID + `", "lookups": ["profile", "email"], "budget_credits": 100}`
	resp, data = b.call(t, http.MethodPost, "/v1/jobs?dry_run=true", keyA, strings.NewReader(byID), "Content-Type", "application/json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dry run by id: %d %s", resp.StatusCode, data)
	}
	est := decode[estimateBody](t, data)
	resp, data = b.submitCSV(t, keyA, "dry_run=true&encoding=windows-1252&lookups=profile,email", file)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dry run inline: %d %s", resp.StatusCode, data)
	}
	if inline := decode[estimateBody](t, data); !reflect.DeepEqual(est, inline) {
		t.Fatalf("estimate by id %+v\ninline %+v", est, inline)
	}
	checkUpload(t, "estimate by id", est.UploadFields, 3, 2, crmExportColumns, "Industry")

	// Another tenant: not found, not estimated, not deleted.
	if resp, _ := b.call(t, http.MethodGet, "/v1/uploads/"+up.ID, keyB, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("tenant B reads it: %d", resp.StatusCode)
	}
	if resp, _ := b.submitJSON(t, keyB, byID); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("tenant B submits it: %d", resp.StatusCode)
	}
	if resp, _ := b.call(t, http.MethodDelete, "/v1/uploads/"+up.ID, keyB, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("tenant B deletes it: %d", resp.StatusCode)
	}

	resp, data = b.submitJSON(t, keyA, byID)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit by id: %d %s", resp.StatusCode, data)
	}
	st := decode[jobStatus](t, data)
	checkUpload(t, "submit by id", st.UploadFields, 3, 2, crmExportColumns, "Industry")
	if st.Rows.Total != 3 || *st.Credits.Budget != 100 {
		t.Fatalf("job %+v", st)
	}

	// Rows and upload_id together are refused; so are job options on an upload.
	resp, data = b.submitJSON(t, keyA, `{"upload_id": "`+up.ID+`", "rows": [{"company": "Acme"}], "roles": ["CEO"]}`)
	if resp.StatusCode != http.StatusUnprocessableEntity || apiErr(t, data).Details[0].Column != "upload_id" {
		t.Fatalf("rows and upload_id: %d %s", resp.StatusCode, data)
	}
	resp, data = b.call(t, http.MethodPost, "/v1/uploads?roles=CEO", keyA, strings.NewReader(file), "Content-Type", "text/csv")
	if e := apiErr(t, data); resp.StatusCode != http.StatusBadRequest || e.Code != "invalid_parameter" || e.Details[0].Column != "roles" {
		t.Fatalf("roles on an upload: %d %s", resp.StatusCode, data)
	}
	// A bad file is the 422 of a submit, naming row and column.
	resp, data = b.call(t, http.MethodPost, "/v1/uploads", keyA, strings.NewReader("name,company,email\nJane,Acme,nope\n"), "Content-Type", "text/csv")
	if e := apiErr(t, data); resp.StatusCode != http.StatusUnprocessableEntity || e.Details[0].Row != 1 || e.Details[0].Column != "email" {
		t.Fatalf("bad file: %d %s", resp.StatusCode, data)
	}

	if resp, data := b.call(t, http.MethodDelete, "/v1/uploads/"+up.ID, keyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, data)
	}
	resp, data = b.call(t, http.MethodGet, "/v1/uploads/"+up.ID, keyA, nil)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(apiErr(t, data).Message, "no such upload") {
		t.Fatalf("after delete: %d %s", resp.StatusCode, data)
	}
}
