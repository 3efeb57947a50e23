package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

// principalKeys are keys of chosen principals.
type principalKeys map[string]service.Principal

func (k principalKeys) Principal(_ context.Context, key string) (service.Principal, bool, error) {
	p, ok := k[key]
	return p, ok, nil
}

func (k principalKeys) KeyLive(_ context.Context, tenant, keyID string) (bool, error) {
	for _, p := range k {
		if p.Tenant == tenant && p.KeyID == keyID {
			return true, nil
		}
	}
	return false, nil
}

// Keys of tenant acme with one scope each, and one of no tenant.
const (
	keyRead     = "key-acme-read"
	keySubmit   = "key-acme-submit"
	keyAdmin    = "key-acme-admin"
	keyNoTenant = "key-no-tenant"
)

func scopedKeys(d *deps) {
	d.Keys = principalKeys{
		keyA:        {Tenant: tenantA, KeyID: "a", Scopes: domain.Scopes},
		keyRead:     {Tenant: tenantA, KeyID: "r", Scopes: []domain.Scope{domain.ScopeRead}},
		keySubmit:   {Tenant: tenantA, KeyID: "s", Scopes: []domain.Scope{domain.ScopeSubmit}},
		keyAdmin:    {Tenant: tenantA, KeyID: "x", Scopes: []domain.Scope{domain.ScopeAdmin}},
		keyNoTenant: {KeyID: "n", Scopes: domain.Scopes},
	}
}

// Each route needs its scope: a key without it gets 403 insufficient_scope
// naming the scope, before anything is read or done; a key with it gets
// through.
func TestRouteScopes(t *testing.T) {
	t.Parallel()
	b := setup(t, scopedKeys)
	if _, err := b.Store.EnsureTenant(context.Background(), tenantA); err != nil {
		t.Fatal(err)
	}
	job := b.mustCreate(t, keyA, "", oneRow)
	routes := []struct {
		method, path, body string
		need               domain.Scope
	}{
		{http.MethodPost, "/v1/jobs", oneRow, domain.ScopeSubmit},
		{http.MethodPost, "/v1/jobs?dry_run=true", oneRow, domain.ScopeSubmit},
		{http.MethodGet, "/v1/jobs", "", domain.ScopeRead},
		{http.MethodGet, "/v1/jobs/" + job.ID, "", domain.ScopeRead},
		{http.MethodGet, "/v1/jobs/" + job.ID + "/results", "", domain.ScopeRead},
		{http.MethodGet, "/v1/jobs/" + job.ID + "/results?format=csv", "", domain.ScopeRead},
		{http.MethodGet, "/v1/jobs/" + job.ID + "/costs", "", domain.ScopeRead},
		{http.MethodPatch, "/v1/jobs/" + job.ID, `{"budget_credits": 5}`, domain.ScopeSubmit},
		{http.MethodPost, "/v1/jobs/" + job.ID + "/resume", "", domain.ScopeSubmit},
		{http.MethodPost, "/v1/jobs/" + job.ID + "/cancel", "", domain.ScopeSubmit},
		{http.MethodGet, "/v1/results", "", domain.ScopeRead},
		{http.MethodGet, "/v1/audit", "", domain.ScopeRead},
		{http.MethodGet, "/v1/vendors", "", domain.ScopeRead},
		{http.MethodPost, "/v1/erasures", `{"email": "jane@example.com"}`, domain.ScopeAdmin},
		{http.MethodGet, "/v1/erasures", "", domain.ScopeAdmin},
		{http.MethodDelete, "/v1/erasures/" + job.ID, "", domain.ScopeAdmin},
		{http.MethodPatch, "/v1/account", `{"retention": "30d"}`, domain.ScopeAdmin},
		{http.MethodPost, "/v1/uploads", "ref,email\n1,jane@example.com\n", domain.ScopeSubmit},
		{http.MethodGet, "/v1/uploads/" + job.ID, "", domain.ScopeRead},
		{http.MethodDelete, "/v1/uploads/" + job.ID, "", domain.ScopeSubmit},
		{http.MethodGet, "/v1/account", "", domain.ScopeRead},
		{http.MethodPatch, "/v1/account", `{"monthly_allowance": 500000}`, domain.ScopeAdmin},
		{http.MethodPost, "/v1/account/webhook-secret", "", domain.ScopeAdmin},
		{http.MethodGet, "/v1/platform/connect", "", domain.ScopeSubmit},
		{http.MethodGet, "/v1/platform/members", "", domain.ScopeRead},
		{http.MethodGet, "/v1/platform/members/" + job.ID, "", domain.ScopeRead},
		{http.MethodGet, "/v1/platform/profile?member=" + job.ID, "", domain.ScopeRead},
		{http.MethodPost, "/v1/platform/sync", `{"members": "all"}`, domain.ScopeSubmit},
		{http.MethodGet, "/v1/platform/sync/" + job.ID, "", domain.ScopeRead},
		{http.MethodPost, "/v1/platform/sync/" + job.ID + "/resume", "", domain.ScopeSubmit},
	}
	keys := map[string]domain.Scope{keyRead: domain.ScopeRead, keySubmit: domain.ScopeSubmit, keyAdmin: domain.ScopeAdmin}
	for _, rt := range routes {
		for key, holds := range keys {
			ct := "text/csv"
			if strings.HasPrefix(rt.body, "{") {
				ct = "application/json"
			}
			resp, data := b.call(t, rt.method, rt.path, key, strings.NewReader(rt.body), "Content-Type", ct)
			if holds == rt.need {
				if resp.StatusCode == http.StatusForbidden {
					t.Errorf("%s %s with a %s key: 403 %s", rt.method, rt.path, holds, data)
				}
				continue
			}
			e := apiErr(t, data)
			if resp.StatusCode != http.StatusForbidden || e.Code != "insufficient_scope" || !strings.Contains(e.Message, `"`+string(rt.need)+`"`) {
				t.Errorf("%s %s with a %s key: %d %s, want 403 insufficient_scope naming %q", rt.method, rt.path, holds, resp.StatusCode, data, rt.need)
			}
		}
	}
	// The refused calls did nothing: one job from keyA, one from the submit
	// key's POST; the dry run stored nothing.
	if jobsN, _ := b.counts(t); jobsN != 2 {
		t.Fatalf("%d jobs, want 2", jobsN)
	}
}

// A key whose tenant is empty sees nothing and makes nothing: the store
// refuses the empty tenant, and the answer is a 403 no_tenant.
func TestKeyWithoutTenantSeesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, scopedKeys)
	job := b.mustCreate(t, keyA, "", oneRow)
	for _, rt := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/jobs", oneRow},
		{http.MethodGet, "/v1/jobs", ""},
		{http.MethodGet, "/v1/jobs/" + job.ID, ""},
		{http.MethodGet, "/v1/jobs/" + job.ID + "/results", ""},
		{http.MethodGet, "/v1/jobs/" + job.ID + "/results?format=ndjson", ""},
		{http.MethodGet, "/v1/jobs/" + job.ID + "/results?format=csv", ""},
		{http.MethodGet, "/v1/jobs/" + job.ID + "/costs", ""},
		{http.MethodPost, "/v1/jobs/" + job.ID + "/cancel", ""},
		{http.MethodGet, "/v1/results", ""},
		{http.MethodGet, "/v1/account", ""},
		{http.MethodPost, "/v1/jobs/" + job.ID + "/resume", ""},
		{http.MethodPost, "/v1/account/webhook-secret", ""},
		{http.MethodGet, "/v1/audit", ""},
		{http.MethodGet, "/v1/vendors", ""},
		{http.MethodGet, "/v1/erasures", ""},
		{http.MethodPost, "/v1/erasures", `{"email": "jane@example.com"}`},
		{http.MethodDelete, "/v1/erasures/" + job.ID, ""},
	} {
		resp, data := b.call(t, rt.method, rt.path, keyNoTenant, strings.NewReader(rt.body), "Content-Type", "text/csv")
		if resp.StatusCode != http.StatusForbidden || apiErr(t, data).Code != "no_tenant" || strings.Contains(string(data), job.ID) {
			t.Errorf("%s %s with a key of no tenant: %d %s, want 403 no_tenant", rt.method, rt.path, resp.StatusCode, data)
		}
	}
	resp, data := b.call(t, http.MethodPatch, "/v1/jobs/"+job.ID, keyNoTenant, strings.NewReader(`{"budget_credits": 1}`), "Content-Type", "application/json")
	if resp.StatusCode != http.StatusForbidden || apiErr(t, data).Code != "no_tenant" {
		t.Errorf("PATCH with a key of no tenant: %d %s", resp.StatusCode, data)
	}
	if jobsN, _ := b.counts(t); jobsN != 1 {
		t.Fatalf("%d jobs, want 1", jobsN)
	}
	st := decode[jobStatus](t, func() []byte { _, d := b.call(t, http.MethodGet, "/v1/jobs/"+job.ID, keyA, nil); return d }())
	if st.State != domain.JobQueued || st.Credits.Budget != nil {
		t.Fatalf("the job changed: %+v", st)
	}
}
