package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/service"
)

// A watch's life over HTTP, every answer checked against openapi.json: a
// period under 7 days and an unfinished job refused, the watch made with
// its estimate, listed, read, paused, run now (its job), its changes
// paged, another tenant's key a 404, deleted.
func TestWatchesAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.Store.EnsureTenant(context.Background(), tenantA); err != nil {
		t.Fatal(err)
	}
	open := b.mustCreate(t, keyA, "lookups=profile", "ref,profile_url\nx1,https://platform.example/in/xavier\n")
	id := resultsJob(t, b)
	if _, err := b.Store.FinishJobs(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	post := func(body string) (*http.Response, []byte) {
		return b.call(t, http.MethodPost, "/v1/watches", keyA, strings.NewReader(body), "Content-Type", "application/json")
	}
	if resp, data := post(`{"job_id": "` + id + `", "every": "3d", "monthly_cap_credits": 100}`); resp.StatusCode != http.StatusBadRequest ||
		apiErr(t, data).Details[0].Column != "every" {
		t.Fatalf("every 3d: %d %s", resp.StatusCode, data)
	}
	if resp, data := post(`{"job_id": "` + open.ID + `", "every": "7d", "monthly_cap_credits": 100}`); resp.StatusCode != http.StatusConflict {
		t.Fatalf("an unfinished job: %d %s", resp.StatusCode, data)
	}
	if resp, data := post(`{"job_id": "` + id + `", "every": "7d", "monthly_cap_credits": 100, "colour": "red"}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an unknown field: %d %s", resp.StatusCode, data)
	}
	resp, data := post(`{"job_id": "` + id + `", "every": "30d", "monthly_cap_credits": 100, "lookups": ["profile"]}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, data)
	}
	created := decode[service.WatchCreated](t, data)
	w := created.Watch
	if w.Inputs != 3 || w.Every != "30d" || w.State != "active" || created.Estimate.Rows != 3 || created.Estimate.RunsPerMonth != 1 ||
		resp.Header.Get("Location") != "/v1/watches/"+w.ID {
		t.Fatalf("created: %s", data)
	}

	if resp, data := b.call(t, http.MethodGet, "/v1/watches", keyA, nil); resp.StatusCode != http.StatusOK ||
		len(decode[service.WatchList](t, data).Watches) != 1 {
		t.Fatalf("list: %d %s", resp.StatusCode, data)
	}
	if resp, data := b.call(t, http.MethodGet, "/v1/watches", keyB, nil); resp.StatusCode != http.StatusOK ||
		len(decode[service.WatchList](t, data).Watches) != 0 {
		t.Fatalf("another tenant's list: %d %s", resp.StatusCode, data)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if resp, data := b.call(t, m, "/v1/watches/"+w.ID, keyB, nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s by another tenant: %d %s", m, resp.StatusCode, data)
		}
	}
	resp, data = b.call(t, http.MethodPatch, "/v1/watches/"+w.ID, keyA, strings.NewReader(`{"state": "paused", "monthly_cap_credits": 50}`),
		"Content-Type", "application/json")
	if v := decode[service.Watch](t, data); resp.StatusCode != http.StatusOK || v.State != "paused" || v.MonthlyCapCredits != 50 {
		t.Fatalf("pause: %d %s", resp.StatusCode, data)
	}
	resp, data = b.call(t, http.MethodPost, "/v1/watches/"+w.ID+"/runs", keyA, strings.NewReader(`{"max_age": "0s"}`), "Content-Type", "application/json")
	run := decode[service.WatchRun](t, data)
	if resp.StatusCode != http.StatusAccepted || run.JobID == nil || run.Rows != 3 || run.Budget != 50 {
		t.Fatalf("run now: %d %s", resp.StatusCode, data)
	}
	// A second run while the first goes: 429 with when to ask again.
	if resp, data := b.call(t, http.MethodPost, "/v1/watches/"+w.ID+"/runs", keyA, nil); resp.StatusCode != http.StatusTooManyRequests ||
		resp.Header.Get("Retry-After") != "60" || apiErr(t, data).Code != "too_many_requests" {
		t.Fatalf("a run while one goes: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), data)
	}
	if resp, data := b.call(t, http.MethodGet, "/v1/jobs/"+*run.JobID, keyA, nil); resp.StatusCode != http.StatusOK ||
		!strings.Contains(string(data), `"total":3`) {
		t.Fatalf("the run's job: %d %s", resp.StatusCode, data)
	}
	if resp, data := b.call(t, http.MethodGet, "/v1/watches/"+w.ID+"/changes", keyA, nil); resp.StatusCode != http.StatusOK ||
		len(decode[service.WatchChanges](t, data).Changes) != 0 {
		t.Fatalf("changes: %d %s", resp.StatusCode, data)
	}
	if resp, data := b.call(t, http.MethodGet, "/v1/account", keyA, nil); resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"watches_spent":0`) {
		t.Fatalf("account: %d %s", resp.StatusCode, data)
	}
	if resp, data := b.call(t, http.MethodDelete, "/v1/watches/"+w.ID, keyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, data)
	}
	if resp, data := b.call(t, http.MethodGet, "/v1/watches/"+w.ID, keyA, nil); resp.StatusCode != http.StatusNotFound ||
		!strings.Contains(string(data), "no such watch") {
		t.Fatalf("after delete: %d %s", resp.StatusCode, data)
	}
}
