package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/service"
)

func withErasureKey(d *deps) { d.svc.ErasureKey = []byte("the erasure key of this test, 32+ bytes") }

// A request that names nobody, or somebody two ways, or badly, is a 400
// saying what is wrong and where; nothing is erased.
func TestErasureRequestsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, withErasureKey)
	for body, field := range map[string]string{
		`{}`:                   "email",
		`{"name": "Jane Doe"}`: "company",
		`{"company": "Acme"}`:  "name",
		`{"email": "jane@example.com", "name": "Jane Doe", "company": "Acme"}`: "email",
		`{"email": "not an email"}`:                  "email",
		`{"profile_url": "platform.example/in/x"}`:   "profile_url",
		`{"name": "Jane", "domain": "not a domain"}`: "domain",
	} {
		resp, data := b.call(t, http.MethodPost, "/v1/erasures", keyA, strings.NewReader(body), "Content-Type", "application/json")
		e := apiErr(t, data)
		if resp.StatusCode != http.StatusBadRequest || len(e.Details) != 1 || e.Details[0].Column != field {
			t.Errorf("POST %s: %d %s, want 400 naming %s", body, resp.StatusCode, data, field)
		}
	}
	for _, body := range []string{`{"email": "jane@example.com", "phone": "1"}`, `[]`, `{"email": 1}`} {
		if resp, data := b.call(t, http.MethodPost, "/v1/erasures", keyA, strings.NewReader(body)); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s: %d %s, want 400", body, resp.StatusCode, data)
		}
	}
	resp, data := b.call(t, http.MethodGet, "/v1/erasures", keyA, nil)
	if list := decode[struct{ Erasures []service.Erasure }](t, data); resp.StatusCode != http.StatusOK || len(list.Erasures) != 0 {
		t.Fatalf("erasures after refusals: %d %s", resp.StatusCode, data)
	}
	for _, id := range []string{"00000000-0000-0000-0000-000000000000", "nope"} {
		if resp, data := b.call(t, http.MethodDelete, "/v1/erasures/"+id, keyA, nil); resp.StatusCode != http.StatusNotFound || apiErr(t, data).Message != "no such erasure" {
			t.Errorf("DELETE %s: %d %s, want 404", id, resp.StatusCode, data)
		}
	}
}

// Without ENRICHQ_ERASURE_KEY an erasure is a 503 that names it.
func TestErasureNeedsKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, data := b.call(t, http.MethodPost, "/v1/erasures", keyA, strings.NewReader(`{"email": "jane@example.com"}`))
	if e := apiErr(t, data); resp.StatusCode != http.StatusServiceUnavailable || e.Code != "erasure_not_configured" || !strings.Contains(e.Message, "ENRICHQ_ERASURE_KEY") {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
}

// The audit log pages with since and limit; a bad since is a 400.
func TestAuditPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := b.mustCreate(t, keyA, "", oneRow)
	for range 3 {
		b.call(t, http.MethodGet, "/v1/jobs/"+job.ID+"/results", keyA, nil)
	}
	b.call(t, http.MethodGet, "/v1/jobs/"+job.ID+"/results", keyB, nil) // another tenant's: a 404, no line
	type page struct {
		Lines     []service.AuditLine
		NextSince int64 `json:"next_since"`
	}
	_, data := b.call(t, http.MethodGet, "/v1/audit?limit=2", keyA, nil)
	p := decode[page](t, data)
	if len(p.Lines) != 2 || p.Lines[0].Action != "results_download" || p.Lines[0].Subject != job.ID || p.NextSince != p.Lines[1].Seq {
		t.Fatalf("first page: %s", data)
	}
	_, data = b.call(t, http.MethodGet, "/v1/audit?since="+strconv.FormatInt(p.NextSince, 10), keyA, nil)
	if p2 := decode[page](t, data); len(p2.Lines) != 1 || p2.Lines[0].Seq <= p.NextSince {
		t.Fatalf("second page: %s", data)
	}
	if _, data := b.call(t, http.MethodGet, "/v1/audit", keyB, nil); len(decode[page](t, data).Lines) != 0 {
		t.Fatalf("tenant beta sees: %s", data)
	}
	if resp, data := b.call(t, http.MethodGet, "/v1/audit?since=-1", keyA, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("since=-1: %d %s", resp.StatusCode, data)
	}
}
