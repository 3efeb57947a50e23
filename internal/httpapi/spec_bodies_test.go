package httpapi

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
)

// The duration fields' patterns in openapi.json are the parsers': every
// value a parser takes matches, every value it refuses for its form does
// not (a value of the right form refused for its size, such as an every
// under 7d, is the schema's description's).
func TestDurationPatternsAreTheParsers(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	schema := func(ref string) map[string]any { return resolveRef(doc, ref).(map[string]any) }
	pattern := func(s map[string]any, where string) *regexp.Regexp {
		p, ok := s["pattern"].(string)
		if !ok {
			t.Fatalf("%s: no pattern", where)
		}
		return regexp.MustCompile(p)
	}
	maxAge := func(v string) bool {
		_, err := ingest.ParseOptions(map[string][]string{"max_age": {v}}, ingest.Limits{})
		return err == nil
	}
	every := func(v string) bool {
		_, err := service.ParseWatchEvery(v)
		return err == nil || strings.Contains(err.Error(), "shorter than")
	}
	retention := func(v string) bool {
		_, err := service.ParseRetention(v)
		return err == nil || (strings.Contains(err.Error(), "shorter than") && !strings.HasPrefix(v, "-"))
	}
	members := func(v string) bool { _, err := parseWindow(v); return err == nil }
	for _, c := range []struct {
		where  string
		schema map[string]any
		parse  func(string) bool
	}{
		{"JobRequest.max_age", schema("#/components/schemas/JobRequest/properties/max_age"), maxAge},
		{"WatchRunRequest.max_age", schema("#/components/schemas/WatchRunRequest/properties/max_age"), maxAge},
		{"WatchRequest.every", schema("#/components/schemas/WatchRequest/properties/every"), every},
		{"WatchPatch.every", schema("#/components/schemas/WatchPatch/properties/every"), every},
		{"AccountPatch.retention", schema("#/components/schemas/AccountPatch/properties/retention"), retention},
		{"POST /v1/jobs ?max_age", queryParam(t, doc, "/v1/jobs", "post", "max_age"), maxAge},
		{"GET /v1/platform/members ?expiring_within", queryParam(t, doc, "/v1/platform/members", "get", "expiring_within"), members},
	} {
		re := pattern(c.schema, c.where)
		for _, v := range []string{"30d", "720h", "0", "0s", "1h30m", "90m", "7d", "1.5h", "365d", "10000h",
			"30", "d", "-1h", "h", "30 d", "thirty days", "1w", "", "1y", "P30D", "30D", "1h 30m"} {
			if c.where == "AccountPatch.retention" && v == "" {
				continue // "" and null are no window; the pattern is of a window
			}
			if got, want := re.MatchString(v), c.parse(v); got != want {
				t.Errorf("%s %q: the pattern says %v, the parser %v", c.where, v, got, want)
			}
		}
	}
}

func queryParam(t *testing.T, doc map[string]any, path, method, name string) map[string]any {
	t.Helper()
	item, _ := doc["paths"].(map[string]any)[path].(map[string]any)
	op, ok := item[method].(map[string]any)
	if !ok {
		t.Fatalf("no %s %s", method, path)
	}
	for _, p := range queryParams(t, doc, op) {
		if p["name"] == name {
			return p["schema"].(map[string]any)
		}
	}
	t.Fatalf("%s %s has no %s", method, path, name)
	return nil
}

// A null where the document says the field cannot be null is refused,
// naming the field, on every JSON body read by jsonin, and nothing is
// stored.
func TestNullRefusedAsTheDocumentSays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		method, path, body, field string
	}{
		{http.MethodPost, "/v1/watches", `{"job_id": "00000000-0000-0000-0000-000000000000", "every": "30d", "monthly_cap_credits": 10, "lookups": null}`, "lookups"},
		{http.MethodPost, "/v1/watches", `{"job_id": "00000000-0000-0000-0000-000000000000", "every": null, "monthly_cap_credits": 10}`, "every"},
		{http.MethodPost, "/v1/watches", `{"job_id": "00000000-0000-0000-0000-000000000000", "every": "30d", "monthly_cap_credits": null}`, "monthly_cap_credits"},
		{http.MethodPatch, "/v1/watches/00000000-0000-0000-0000-000000000000", `{"state": null}`, "state"},
		{http.MethodPost, "/v1/watches/00000000-0000-0000-0000-000000000000/runs", `{"max_age": null}`, "max_age"},
		{http.MethodPost, "/v1/erasures", `{"email": "jane@example.com", "name": null}`, "name"},
		{http.MethodPost, "/v1/erasures", `{"email": null, "profile_url": "https://platform.example/in/jane"}`, "email"},
	} {
		resp, data := b.call(t, c.method, c.path, keyA, strings.NewReader(c.body), "Content-Type", "application/json")
		e := apiErr(t, data)
		if resp.StatusCode != http.StatusBadRequest || len(e.Details) != 1 || e.Details[0].Column != c.field || !strings.Contains(e.Message, "cannot be null") {
			t.Errorf("%s %s %s: %s %s", c.method, c.path, c.body, resp.Status, data)
		}
	}
	if jobs, _ := b.counts(t); jobs != 0 {
		t.Fatalf("%d jobs", jobs)
	}
}
