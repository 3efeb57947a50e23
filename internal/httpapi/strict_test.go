package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// strictOperations are the operations of openapi.json the strict checks
// cover, with their rules: every one but the web page's and the platform's
// consent redirect.
func strictOperations(t *testing.T) map[string]routeRule {
	t.Helper()
	rules := routeRules(openAPIDoc)
	for op := range openAPIOperations(t, loadOpenAPI(t)) {
		method, path, _ := strings.Cut(op, " ")
		if strings.HasPrefix(path, "/ui/") || path == "/" || strictExempt[op] {
			continue
		}
		if _, ok := rules[method+" "+path]; !ok {
			t.Errorf("%s: no rule", op)
		}
	}
	if len(rules) < 30 {
		t.Fatalf("%d rules: the document was not read", len(rules))
	}
	return rules
}

// pathOf is pattern's path with every {x} a UUID, or bad for the UUID ones.
func pathOf(pattern, bad string, rule routeRule) string {
	_, path, _ := strings.Cut(pattern, " ")
	return wildcard.ReplaceAllStringFunc(path, func(m string) string {
		name := strings.Trim(m, "{}")
		for _, u := range rule.uuidPath {
			if u == name && bad != "" {
				return bad
			}
		}
		return "00000000-0000-0000-0000-000000000000"
	})
}

// Every route of the API refuses a query parameter its operation in
// openapi.json does not declare, with a 400 naming it (after the key: a
// request without one is a 401), and serves those it declares.
func TestUnknownQueryParameterRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for pattern, rule := range strictOperations(t) {
		method, _, _ := strings.Cut(pattern, " ")
		path := pathOf(pattern, "", rule) + "?" + url.Values{"colour": {"blue"}}.Encode()
		resp, body := b.call(t, method, path, keyA, nil, "Accept", "application/json, text/event-stream")
		e := apiErr(t, body)
		if resp.StatusCode != http.StatusBadRequest || e.Code != "invalid_parameter" || len(e.Details) != 1 || e.Details[0].Column != "colour" ||
			!strings.Contains(e.Message, `"colour" is not a parameter here`) {
			t.Errorf("%s with ?colour=blue: %s %s", pattern, resp.Status, body)
			continue
		}
		for _, name := range rule.query {
			if !strings.Contains(e.Message, name) {
				t.Errorf("%s: %q does not list the parameter %s", pattern, e.Message, name)
			}
		}
		if rule.open {
			continue
		}
		if resp, _ := b.call(t, method, path, "", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s with ?colour=blue and no key: %s, want 401", pattern, resp.Status)
		}
	}
	// Declared ones pass.
	for _, path := range []string{"/v1/jobs?limit=5&cursor=", "/v1/watches?limit=5", "/v1/results?since=0&limit=10", "/v1/audit?limit=3", "/healthz"} {
		if resp, body := b.call(t, http.MethodGet, path, keyA, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s %s", path, resp.Status, body)
		}
	}
}

// An {id} that cannot be an id (not a UUID, or holding U+0000) is the 404 of
// an id that names nothing on every route that has one, and logs no warning.
func TestMalformedIDIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	n := 0
	for pattern, rule := range strictOperations(t) {
		if len(rule.uuidPath) == 0 {
			continue
		}
		n++
		method, _, _ := strings.Cut(pattern, " ")
		for _, bad := range []string{"not-a-uuid", "%00", "1", "00000000-0000-0000-0000-00000000000g", "%E2%82%AC"} {
			var body *strings.Reader
			header := []string{"Content-Type", "application/json"}
			if method == http.MethodPatch || method == http.MethodPost {
				body = strings.NewReader(`{}`)
			}
			var resp *http.Response
			var data []byte
			if body != nil {
				resp, data = b.call(t, method, pathOf(pattern, bad, rule), keyA, body, header...)
			} else {
				resp, data = b.call(t, method, pathOf(pattern, bad, rule), keyA, nil)
			}
			if e := apiErr(t, data); resp.StatusCode != http.StatusNotFound || e.Code != "not_found" || !strings.HasPrefix(e.Message, "no such "+rule.noun) {
				t.Errorf("%s with id %q: %s %s, want 404 no such %s", pattern, bad, resp.Status, data, rule.noun)
			}
		}
	}
	if n < 15 {
		t.Fatalf("only %d routes with a UUID {id}", n)
	}
	if logs := b.logs.String(); strings.Contains(logs, `"level":"WARN"`) || strings.Contains(logs, `"level":"ERROR"`) {
		t.Errorf("malformed ids logged warnings:\n%s", logs)
	}
}

// A JSON job takes its options in its body: a file upload's query options
// beside a JSON body are refused (422 naming the first), not ignored, and
// nothing is stored; dry_run still prices it.
func TestJSONJobRefusesQueryOptions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, q := range []string{"roles=CEO", "columns=company:Account", "lookups=email", "encoding=utf-8", "sheet=Sheet1", "budget_credits=5&name=x"} {
		resp, data := b.call(t, http.MethodPost, "/v1/jobs?"+q, keyA, strings.NewReader(`{"rows": [{"company": "Acme"}], "roles": ["CTO"]}`),
			"Content-Type", "application/json")
		e := apiErr(t, data)
		name, _, _ := strings.Cut(q, "=")
		if resp.StatusCode != http.StatusUnprocessableEntity || e.Code != "invalid_options" || len(e.Details) != 1 || e.Details[0].Column != name {
			t.Errorf("?%s with a JSON body: %s %s", q, resp.Status, data)
		}
	}
	if jobs, _ := b.counts(t); jobs != 0 {
		t.Fatalf("%d jobs stored", jobs)
	}
	if resp, data := b.call(t, http.MethodPost, "/v1/jobs?dry_run=true", keyA, strings.NewReader(`{"rows": [{"company": "Acme"}], "roles": ["CTO"]}`),
		"Content-Type", "application/json"); resp.StatusCode != http.StatusOK {
		t.Errorf("dry_run with a JSON body: %s %s", resp.Status, data)
	}
}
