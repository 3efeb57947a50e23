package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// nul is a JSON string holding U+0000, as a client escapes it.
const nul = `"a\u0000b"`

// jsonCase is one string of one JSON route's body: body has X where the
// string goes; field is what the answer must name.
type jsonCase struct {
	method, path, body, field string
}

// jsonRouteCases are the strings of every route that takes a JSON body (but
// /mcp, whose tool arguments internal/mcpserver tests). {job} is a job of
// tenant A.
var jsonRouteCases = []jsonCase{
	{"POST", "/v1/jobs", `{"name": X, "rows": [{"company": "Initech"}], "roles": ["CTO"]}`, "name"},
	{"POST", "/v1/jobs", `{"rows": [{"company": X}], "roles": ["CTO"]}`, "company"},
	{"POST", "/v1/jobs", `{"rows": [{"name": X, "domain": "initech.example"}]}`, "name"},
	{"POST", "/v1/jobs", `{"rows": [{"email": X}]}`, "email"},
	{"POST", "/v1/jobs", `{"rows": [{"profile_url": X}]}`, "profile_url"},
	{"POST", "/v1/jobs", `{"rows": [{"ref": X, "company": "Initech"}], "roles": ["CTO"]}`, "ref"},
	{"POST", "/v1/jobs", `{"rows": [{"company": "Initech", "role": X}]}`, "role"},
	{"POST", "/v1/jobs", `{"rows": [{"company": "Initech", "extra": {"owner": X}}], "roles": ["CTO"]}`, "owner"},
	{"POST", "/v1/jobs", `{"rows": [{"company": "Initech", "extra": {X: "Jane"}}], "roles": ["CTO"]}`, "extra"},
	{"POST", "/v1/jobs", `{"rows": [{"company": "Initech"}], "roles": [X]}`, "roles"},
	{"POST", "/v1/jobs", `{"rows": [{"company": "Initech"}], "roles": ["CTO"], "lookups": [X]}`, "lookups"},
	{"POST", "/v1/jobs", `{"rows": [{"company": "Initech"}], "roles": ["CTO"], "max_age": X}`, "max_age"},
	{"POST", "/v1/jobs", `{"rows": [{"company": "Initech"}], "roles": ["CTO"], "callback_url": X}`, "callback_url"},
	{"POST", "/v1/jobs", `{"rows": [{"extra": {"Account": "Initech"}}], "roles": ["CTO"], "columns": {"company": X}}`, "columns"},
	{"POST", "/v1/jobs", `{"upload_id": X}`, "upload_id"},
	{"POST", "/v1/jobs?dry_run=true", `{"rows": [{"company": X}], "roles": ["CTO"]}`, "company"},
	{"POST", "/v1/uploads", `{"rows": [{"company": X}]}`, "company"},
	{"PATCH", "/v1/jobs/{job}", `{"budget_credits": 10, "note": X}`, "note"},
	{"PATCH", "/v1/account", `{"retention": X}`, "retention"},
	{"POST", "/v1/erasures", `{"email": X}`, "email"},
	{"POST", "/v1/erasures", `{"profile_url": X}`, "profile_url"},
	{"POST", "/v1/erasures", `{"name": X, "company": "Initech"}`, "name"},
	{"POST", "/v1/erasures", `{"name": "Jane Doe", "company": X}`, "company"},
	{"POST", "/v1/erasures", `{"name": "Jane Doe", "domain": X}`, "domain"},
	{"POST", "/v1/platform/sync", `{"members": [X]}`, "members[0]"},
	{"POST", "/v1/platform/sync", `{"members": X}`, "members"},
	{"POST", "/v1/platform/sync", `{"name": X, "members": "all"}`, "name"},
}

// A control character in any string of any JSON body is a 4xx naming the
// field, never a 500 (Postgres refuses U+0000 in text) and never stored.
func TestControlCharactersRefusedInJSON(t *testing.T) {
	t.Parallel()
	pb := platformSetup(t, nil)
	pb.connect(t, keyA, "m-1", "Ada")
	b := setup(t, withErasureKey)
	resp, data := b.submitJSON(t, keyA, `{"rows": [{"company": "Initech"}], "roles": ["CTO"]}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d %s", resp.StatusCode, data)
	}
	job := decode[jobStatus](t, data).ID
	for _, c := range jsonRouteCases {
		srv := b
		if strings.HasPrefix(c.path, "/v1/platform/") {
			srv = pb.bundle
		}
		for _, s := range []string{nul, `"a\u001bb"`, `"a\u0085b"`} {
			body := strings.Replace(c.body, "X", s, 1)
			path := strings.Replace(c.path, "{job}", job, 1)
			resp, data := srv.call(t, c.method, path, keyA, strings.NewReader(body), "Content-Type", "application/json")
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Errorf("%s %s %s: %d %s, want a 4xx", c.method, path, body, resp.StatusCode, data)
				continue
			}
			e := apiErr(t, data)
			named := strings.Contains(e.Message, c.field)
			for _, d := range e.Details {
				named = named || strings.Contains(d.Column, c.field) || strings.Contains(d.Message, c.field)
			}
			if !named || !strings.Contains(string(data), "control character") {
				t.Errorf("%s %s %s: %d %s, want the field %s and the control character named", c.method, path, body, resp.StatusCode, data, c.field)
			}
		}
	}
}
