package jobs_test

import (
	"context"
	"os"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// failingVendor answers each profile lookup with the error of its company.
type failingVendor struct {
	Vendor
	errs map[string]error
}

func (v *failingVendor) Profile(ctx context.Context, q enrich.ProfileQuery, key string) (seed.ProfileResult, error) {
	if err, ok := v.errs[q.Company]; ok {
		return seed.ProfileResult{}, err
	}
	return v.Vendor.Profile(ctx, q, key)
}

// A row's reason and last error, which its tenant reads in the results,
// name the class of the failure, never the transport's, the vendor
// client's or the vendor's own text (that is the worker's log's: the
// vendor's may speak of the operator's account); of an input it refused,
// its status and plain error code stay.
func TestRowErrorsNameTheirClass(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	raw := `Get "http://10.0.0.7:8443/v1/profile?company=x": dial tcp 10.0.0.7:8443: i/o timeout`
	errs := map[string]error{
		"Timeout GmbH": &enrich.Error{Class: enrich.ClassTransient, Endpoint: "profile", Code: "network_error", Message: raw,
			OutcomeUnknown: true, Err: os.ErrDeadlineExceeded},
		"Down GmbH": &enrich.Error{Class: enrich.ClassTransient, Endpoint: "profile", Status: 503, Code: "unavailable",
			Message: "upstream connect error or disconnect/reset before headers. reset reason: overflow (10.0.0.7)"},
		"Garbled GmbH": &enrich.Error{Class: enrich.ClassTransient, Endpoint: "profile", Status: 200, Code: "malformed_response",
			Message: "invalid character '<' looking for beginning of value", OutcomeUnknown: true},
		"Refused GmbH": &enrich.Error{Class: enrich.ClassPermanent, Endpoint: "profile", Status: 422, Code: "invalid_request",
			Message: "company is too vague"},
		"Account GmbH": &enrich.Error{Class: enrich.ClassPermanent, Endpoint: "profile", Status: 400, Code: "Account ops@operator.example: plan past due",
			Message: "account ops@operator.example (plan Pro, invoice 2026-11 unpaid): lookups by company disabled"},
		"Reset GmbH": &enrich.Error{Class: enrich.ClassTransient, Endpoint: "profile", Code: "network_error",
			Message: "read tcp 127.0.0.1:40214->10.0.0.7:8443: read: connection reset by peer", OutcomeUnknown: true},
	}
	want := map[string][2]string{ // reason, last error
		"Timeout GmbH": {"attempts exhausted (1): vendor timed out", "vendor timed out"},
		"Down GmbH":    {"attempts exhausted (1): vendor unavailable (503)", "vendor unavailable (503)"},
		"Garbled GmbH": {"attempts exhausted (1): vendor answer unreadable", "vendor answer unreadable"},
		"Refused GmbH": {"vendor rejected the input (422 invalid_request)", "vendor rejected the input (422 invalid_request)"},
		"Account GmbH": {"vendor rejected the input (400)", "vendor rejected the input (400)"},
		"Reset GmbH":   {"attempts exhausted (1): vendor unreachable", "vendor unreachable"},
	}
	var rows []ingest.RowIn
	for company := range errs {
		rows = append(rows, ingest.RowIn{Ref: company, Company: company})
	}
	job := b.Submit(t, rows, ingest.JobOptions{Roles: []string{"CTO"}})
	proc := jobs.NewProcessor(b.Store, []jobs.VendorConfig{jobstest.SeedVendor(&failingVendor{Vendor: b.Client, errs: errs}, noLimit{}, "")}, jobs.ProcessorConfig{MaxAttempts: 1}, b.Log)
	if _, err := proc.ProcessChunk(context.Background(), store.ChunkRef{JobID: job.ID, Chunk: 0}); err != nil {
		t.Fatal(err)
	}
	for _, r := range storetest.StoredRows(t, b.Store, job.ID) {
		w := want[r.Ref]
		if r.State != string(domain.RowFailed) || r.Reason != w[0] || r.LastError != w[1] {
			t.Errorf("%s: %s, reason %q, last error %q; want failed, %q, %q", r.Ref, r.State, r.Reason, r.LastError, w[0], w[1])
		}
	}
}
