package service_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/ingest/ingesttest"
	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// crmCSV is a CRM export: a person row, a company-only row (it needs roles),
// a role-title row, a duplicate, an extra column and a blank line.
const crmCSV = "Account Name,Website,Full Name,Job Title,Industry\n" +
	"Acme GmbH,acme.example,Jane Doe,,Software\n" +
	"Globex,globex.example,,,Energy\n" +
	",,,,\n" +
	"Initech,,,CTO,Finance\n" +
	"Acme GmbH,acme.example,Jane Doe,,Software\n"

// inlineCSV is a submission of csv as POST /v1/jobs builds it, recording
// what the upload held.
func inlineCSV(csv string, opts ingest.JobOptions) service.Submission {
	c := &service.Counted{}
	return service.Submission{Format: "csv", Options: opts, Upload: c.Upload, Feed: c.Feed(func(emit func(ingest.Lookup) error) (ingest.Summary, error) {
		return ingest.ParseCSV(strings.NewReader(csv), opts.Ingest(), ingest.DefaultLimits(), emit)
	})}
}

// jobOptions are the options of a job looking up profiles and emails for
// two roles.
func jobOptions() ingest.JobOptions {
	budget := int64(1000)
	return ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}, Roles: []string{"CEO", "CTO"},
		BudgetCredits: &budget, MaxAge: ingest.DefaultMaxAge}
}

// fileOptions are an upload's options: none but how the file is read.
func fileOptions() ingest.JobOptions {
	return ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile}, MaxAge: ingest.DefaultMaxAge}
}

func mustUpload(t *testing.T, svc *service.Service, p service.Principal, format, body string) service.Upload {
	t.Helper()
	up, err := svc.Upload(context.Background(), p, service.UploadRequest{Filename: "list." + format, Format: format,
		Body: strings.NewReader(body), Options: fileOptions()})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	return up
}

// results are a job's rows without their ids.
func results(t *testing.T, st *store.Store, jobID string) []store.Result {
	t.Helper()
	rs, err := st.ListResults(context.Background(), jobID, "", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rs {
		rs[i].RowID = 0
	}
	return rs
}

// An upload estimated and submitted by its id is the inline upload of the
// same file: the same estimate, the same lookups, the same upload fields.
func TestUploadThenSubmitByIDEqualsInline(t *testing.T) {
	t.Parallel()
	svc, st := setup(t)
	ctx := context.Background()

	up := mustUpload(t, svc, acme, service.FormatCSV, crmCSV)
	if up.ID == "" || up.Filename != "list.csv" || up.Rows != 4 || up.RowsNeedingRoles != 1 || up.LookupsWithoutRoles != nil ||
		up.Bytes != int64(len(crmCSV)) || !up.ExpiresAt.Equal(up.CreatedAt.Add(service.DefaultUploadTTL)) {
		t.Fatalf("upload: %+v", up)
	}
	wantCols := map[string]string{"Account Name": "company", "Website": "domain", "Full Name": "name", "Job Title": "role"}
	if !reflect.DeepEqual(up.Columns, wantCols) || !reflect.DeepEqual(up.ExtraColumns, []string{"Industry"}) {
		t.Fatalf("upload columns %v, extras %v", up.Columns, up.ExtraColumns)
	}
	got, err := svc.GetUpload(ctx, acme, up.ID)
	if err != nil || !reflect.DeepEqual(got, up) {
		t.Fatalf("get: %+v, %v; want %+v", got, err, up)
	}

	inlineEst, err := svc.Estimate(ctx, acme, inlineCSV(crmCSV, jobOptions()))
	if err != nil {
		t.Fatal(err)
	}
	byID, err := svc.Estimate(ctx, acme, service.Submission{Options: jobOptions(), UploadID: up.ID})
	if err != nil {
		t.Fatal(err)
	}
	if byID != inlineEst || byID.Rows != 6 {
		t.Fatalf("estimate by id %+v, inline %+v", byID, inlineEst)
	}

	inline, _, err := svc.Submit(ctx, acme, inlineCSV(crmCSV, jobOptions()))
	if err != nil {
		t.Fatal(err)
	}
	stored, created, err := svc.Submit(ctx, acme, service.Submission{Options: jobOptions(), UploadID: up.ID})
	if err != nil || !created {
		t.Fatalf("submit by id: created %v, %v", created, err)
	}
	if !reflect.DeepEqual(stored.UploadFields, inline.UploadFields) || *stored.RowsUploaded != 4 || stored.Rows != inline.Rows ||
		*stored.Credits.Budget != *inline.Credits.Budget ||
		!reflect.DeepEqual(stored.Lookups, inline.Lookups) || !reflect.DeepEqual(stored.Roles, inline.Roles) {
		t.Fatalf("by id %+v\ninline %+v", stored, inline)
	}
	if a, b := results(t, st, stored.ID), results(t, st, inline.ID); !reflect.DeepEqual(a, b) || len(a) != 6 {
		t.Fatalf("rows by id %+v\ninline %+v", a, b)
	}
	for _, id := range []string{stored.ID, inline.ID} {
		job, err := st.GetJob(ctx, "acme", id)
		if err != nil || job.SourceFormat != "csv" {
			t.Fatalf("job %s: format %q, %v", id, job.SourceFormat, err)
		}
	}
	// The upload stays for another job, until it is deleted.
	if _, err := svc.GetUpload(ctx, acme, up.ID); err != nil {
		t.Fatalf("after submit: %v", err)
	}
}

// Every format goes through the parser its inline upload goes through.
func TestUploadFormats(t *testing.T) {
	t.Parallel()
	svc, _ := setup(t)
	ctx := context.Background()
	tsv := strings.ReplaceAll(crmCSV, ",", "\t")
	jsonBody := `{"rows": [{"name": "Jane Doe", "company": "Acme", "extra": {"Seat": "3"}}, {"company": "Globex"}]}`
	for _, tc := range []struct {
		format, body string
		rows         int
	}{
		{service.FormatTSV, tsv, 4},
		{service.FormatJSON, jsonBody, 2},
		{service.FormatXLSX, string(ingesttest.XLSXOfCSV(t, crmCSV)), 4},
	} {
		up := mustUpload(t, svc, acme, tc.format, tc.body)
		if up.Rows != tc.rows || up.RowsNeedingRoles != 1 || up.Format != tc.format {
			t.Errorf("%s: %+v", tc.format, up)
			continue
		}
		est, err := svc.Estimate(ctx, acme, service.Submission{Options: jobOptions(), UploadID: up.ID})
		if err != nil || est.Rows == 0 {
			t.Errorf("%s: estimate %+v, %v", tc.format, est, err)
		}
	}
}

// A file without company-only rows says what it looks up without roles.
func TestUploadLookupsWithoutRoles(t *testing.T) {
	t.Parallel()
	svc, _ := setup(t)
	up := mustUpload(t, svc, acme, service.FormatCSV, "name,company\nJane,Acme\nJohn,Acme\n")
	if up.LookupsWithoutRoles == nil || *up.LookupsWithoutRoles != 2 || up.RowsNeedingRoles != 0 {
		t.Fatalf("%+v", up)
	}
	// Its company-only rows need the roles an estimate gives.
	up = mustUpload(t, svc, acme, service.FormatCSV, "company\nAcme\n")
	_, err := svc.Estimate(context.Background(), acme, service.Submission{Options: fileOptions(), UploadID: up.ID})
	var ie *ingest.Error
	if !errors.As(err, &ie) || ie.Code != ingest.CodeInvalidRows || ie.Details[0].Row != 1 {
		t.Fatalf("estimate without roles: %v", err)
	}
}

// A bad file is the error an inline submit gives, and nothing is stored;
// so are job options on an upload and both rows and upload_id.
func TestUploadRejects(t *testing.T) {
	t.Parallel()
	svc, st := setup(t)
	ctx := context.Background()
	bad := "name,company,email\nJane,Acme,not-an-email\n"
	_, err := svc.Upload(ctx, acme, service.UploadRequest{Format: service.FormatCSV, Body: strings.NewReader(bad), Options: fileOptions()})
	_, inlineErr := svc.Estimate(ctx, acme, inlineCSV(bad, jobOptions()))
	var ie *ingest.Error
	if !errors.As(err, &ie) || ie.Code != ingest.CodeInvalidRows || ie.Details[0].Row != 1 || ie.Details[0].Column != "email" ||
		inlineErr == nil || err.Error() != inlineErr.Error() {
		t.Fatalf("bad file: %v; inline: %v", err, inlineErr)
	}
	if n := storetest.Uploads(t, st); n != 0 {
		t.Fatalf("%d uploads stored after a bad file", n)
	}

	opts := fileOptions()
	opts.Roles = []string{"CEO"}
	_, err = svc.Upload(ctx, acme, service.UploadRequest{Format: service.FormatCSV, Body: strings.NewReader(crmCSV), Options: opts})
	var inv *service.InvalidError
	if !errors.As(err, &inv) || inv.Code != service.CodeInvalidOptions || inv.Details[0].Column != "roles" {
		t.Fatalf("roles on an upload: %v", err)
	}
	big := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st}, Limits: ingest.Limits{MaxBytes: 10}})
	_, err = big.Upload(ctx, acme, service.UploadRequest{Format: service.FormatCSV, Body: strings.NewReader(crmCSV), Options: fileOptions()})
	if !errors.As(err, &ie) || ie.Code != ingest.CodeTooLarge {
		t.Fatalf("over the byte limit: %v", err)
	}
	_, err = svc.Upload(ctx, acmeRead, service.UploadRequest{Format: service.FormatCSV, Body: strings.NewReader(crmCSV)})
	var fe *service.ForbiddenError
	if !errors.As(err, &fe) {
		t.Fatalf("read key: %v", err)
	}
	if n := storetest.Uploads(t, st); n != 0 {
		t.Fatalf("%d uploads stored", n)
	}

	up := mustUpload(t, svc, acme, service.FormatCSV, crmCSV)
	both := inlineCSV(crmCSV, jobOptions())
	both.UploadID = up.ID
	if _, _, err := svc.Submit(ctx, acme, both); !errors.As(err, &inv) || inv.Details[0].Column != "upload_id" {
		t.Fatalf("rows and upload_id: %v", err)
	}
	remap := jobOptions()
	remap.Columns = map[string]string{"company": "Website"}
	if _, err := svc.Estimate(ctx, acme, service.Submission{Options: remap, UploadID: up.ID}); !errors.As(err, &inv) {
		t.Fatalf("columns by id: %v", err)
	}
}

// Another tenant's upload is not found, for reading, deleting, estimating
// and submitting; the owner deletes it.
func TestUploadTenantIsolation(t *testing.T) {
	t.Parallel()
	svc, st := setup(t)
	ctx := context.Background()
	up := mustUpload(t, svc, acme, service.FormatCSV, crmCSV)
	if _, err := svc.GetUpload(ctx, beta, up.ID); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("beta reads acme's upload: %v", err)
	}
	if err := svc.DeleteUpload(ctx, beta, up.ID); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("beta deletes acme's upload: %v", err)
	}
	var inv *service.InvalidError
	if _, err := svc.Estimate(ctx, beta, service.Submission{Options: jobOptions(), UploadID: up.ID}); !errors.As(err, &inv) || inv.Message != "no such upload" {
		t.Fatalf("beta estimates acme's upload: %v", err)
	}
	if _, _, err := svc.Submit(ctx, beta, service.Submission{Options: jobOptions(), UploadID: up.ID}); !errors.As(err, &inv) {
		t.Fatalf("beta submits acme's upload: %v", err)
	}
	if _, err := svc.GetUpload(ctx, noTenant, up.ID); !errors.Is(err, service.ErrNoTenant) {
		t.Fatalf("no tenant: %v", err)
	}
	if jobsN, _ := storetest.JobsAndRows(t, st); jobsN != 0 {
		t.Fatalf("%d jobs", jobsN)
	}
	if err := svc.DeleteUpload(ctx, acme, up.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.GetUpload(ctx, acme, up.ID); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := svc.DeleteUpload(ctx, acme, "not-a-uuid"); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("a malformed id: %v", err)
	}
}

// An upload is gone for its tenant once its TTL has passed on the clock,
// and the expirer deletes it then, not before.
func TestUploadExpiry(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	now := time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st}, Now: clock,
		Uploads: service.UploadLimits{TTL: time.Hour}})
	ctx := context.Background()
	up := mustUpload(t, svc, acme, service.FormatCSV, crmCSV)
	expirer := maintenance.NewUploadExpirer(st, maintenance.UploadExpirerConfig{Now: clock, Batch: 1})

	now = now.Add(59 * time.Minute)
	if n, err := expirer.Step(ctx); n != 0 || err != nil {
		t.Fatalf("before expiry: deleted %d, %v", n, err)
	}
	if _, err := svc.GetUpload(ctx, acme, up.ID); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	now = now.Add(time.Minute)
	if _, err := svc.GetUpload(ctx, acme, up.ID); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("at expiry: %v", err)
	}
	if _, err := svc.Estimate(ctx, acme, service.Submission{Options: jobOptions(), UploadID: up.ID}); err == nil {
		t.Fatal("an expired upload was estimated")
	}
	if n, err := expirer.Step(ctx); n != 1 || err != nil {
		t.Fatalf("at expiry: deleted %d, %v", n, err)
	}
	if n := storetest.Uploads(t, st); n != 0 {
		t.Fatalf("%d uploads left", n)
	}
}

// A tenant's live uploads are capped in number and bytes; another tenant
// has its own cap, and an expired upload counts no more.
func TestUploadQuota(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	now := time.Now()
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st}, Now: func() time.Time { return now },
		Uploads: service.UploadLimits{MaxUploads: 2, MaxBytes: int64(3 * len(crmCSV)), TTL: time.Hour}})
	ctx := context.Background()
	mustUpload(t, svc, acme, service.FormatCSV, crmCSV)
	mustUpload(t, svc, acme, service.FormatCSV, crmCSV)
	_, err := svc.Upload(ctx, acme, service.UploadRequest{Format: service.FormatCSV, Body: strings.NewReader(crmCSV), Options: fileOptions()})
	var ce *service.ConflictError
	if !errors.As(err, &ce) || ce.Code != service.CodeUploadQuota || !strings.Contains(ce.Message, "2 live uploads; the limit is 2") {
		t.Fatalf("third upload: %v", err)
	}
	mustUpload(t, svc, beta, service.FormatCSV, crmCSV)
	long := crmCSV + strings.Repeat("Acme GmbH,acme.example,Jane Doe,,Software\n", 12) // over twice crmCSV
	_, err = svc.Upload(ctx, beta, service.UploadRequest{Format: service.FormatCSV, Body: strings.NewReader(long), Options: fileOptions()})
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "bytes") {
		t.Fatalf("over the bytes: %v", err)
	}
	now = now.Add(time.Hour)
	mustUpload(t, svc, acme, service.FormatCSV, crmCSV)
}
