package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
)

// writeFile writes a vendors file in the test's directory and returns its path.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "vendors.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const validVendors = `
vendors:
  - name: acme
    kind: seed
    url: https://api.acme.example/
    key_env: ACME_KEY
    rate: 10
    monthly_credits: 50000
    prices: {email_verified: 12, phone_miss: 0}
  - name: pdl
    kind: pdl
    url: https://api.pdl.example
    key_env: PDL_KEY
    rate: 16.6
    burst: 5
    credit_value: 3
    bulk: false
    prior_hit_rate: 0.7
    timeout: 10s
    min_likelihood: {name_company: 7, email: 5}
    required: {email: work_email, phone: ""}
    batch_size: 50
    honours_keys: false
    prices: {match: 1}
order: [pdl, acme]
explore: 0.1
`

func TestVendorsFile(t *testing.T) {
	t.Parallel()
	e := map[string]string{"ENRICHQ_VENDORS_FILE": writeFile(t, validVendors), "ACME_KEY": "acme-secret", "PDL_KEY": "pdl-secret"}
	w, err := WorkerFromEnv(env(e))
	if err != nil {
		t.Fatal(err)
	}
	v := w.Vendors
	if len(v.List) != 2 || v.Explore != 0.1 || strings.Join(v.Order, ",") != "pdl,acme" || v.File != e["ENRICHQ_VENDORS_FILE"] {
		t.Fatalf("vendors = %+v", v)
	}
	a, p := v.List[0], v.List[1]
	if a.Name != "acme" || a.Kind != VendorSeed || a.URL != "https://api.acme.example" || a.Key != "acme-secret" || a.KeyEnv != "ACME_KEY" ||
		a.Rate != 10 || a.Burst != 1 || a.CreditValue != 1 || !a.Bulk || *a.Allowance() != 50000 || a.HonoursKeys != domain.HonoursKeysAuto ||
		a.PriorHitRate != 0.5 || a.Timeout != 30*time.Second || a.Prices["email_verified"] != 12 || a.BatchSize != 0 || a.Account() != VendorAccount("acme-secret") {
		t.Fatalf("acme = %+v", a)
	}
	if p.Kind != VendorPDL || p.Key != "pdl-secret" || p.Rate != 16.6 || p.Burst != 5 || p.CreditValue != 3 || p.Bulk || p.PriorHitRate != 0.7 ||
		p.Timeout != 10*time.Second || len(p.MinLikelihood) != 2 || p.MinLikelihood[domain.InputNameCompany] != 7 ||
		p.MinLikelihood[domain.InputEmail] != 5 || len(p.Required) != 2 || p.Required[domain.StageEmail] != "work_email" || p.Required[domain.StagePhone] != "" || p.BatchSize != 50 ||
		p.HonoursKeys != domain.HonoursKeysFalse || p.Prices["match"] != 1 || p.Allowance() != nil {
		t.Fatalf("pdl = %+v", p)
	}
	// Until the waterfall, the worker calls the first seed vendor.
	if w.Vendor.URL != a.URL || w.Vendor.Key != string(a.Key) || w.Vendor.RPS != 10 || w.Vendor.MonthlyCredits != 50000 || !w.Vendor.Bulk {
		t.Fatalf("worker vendor = %+v", w.Vendor)
	}
	if s := a.String() + p.GoString(); strings.Contains(s, "secret") {
		t.Fatalf("a spec prints its key: %s", s)
	}

	// The API reads the file without needing the keys.
	api, err := APIFromEnv(env(map[string]string{"ENRICHQ_VENDORS_FILE": e["ENRICHQ_VENDORS_FILE"]}))
	if err != nil || len(api.Vendors.List) != 2 || api.Vendors.List[0].Key != "" || api.VendorRPS != 10 || !api.VendorBulk {
		t.Fatalf("API: %+v, %v", api.Vendors, err)
	}

	// One floor and one expression stand for every input kind and stage.
	one := writeFile(t, "vendors:\n  - {name: p, kind: pdl, url: 'http://127.0.0.1:9', key_env: K, rate: 1, min_likelihood: 8, required: mobile_phone}\n")
	w, err = WorkerFromEnv(env(map[string]string{"ENRICHQ_VENDORS_FILE": one, "K": "k"}))
	if err != nil || len(w.Vendors.List[0].MinLikelihood) != 4 || w.Vendors.List[0].MinLikelihood[domain.InputProfileURL] != 8 ||
		len(w.Vendors.List[0].Required) != 3 || w.Vendors.List[0].Required[domain.StageProfile] != "mobile_phone" {
		t.Fatalf("one floor: %+v, %v", w.Vendors.List, err)
	}

	// Defaults: order auto, explore 0.05, a pdl vendor's batch 80.
	min := writeFile(t, "vendors:\n  - {name: p, kind: pdl, url: 'http://127.0.0.1:9', key_env: K, rate: 1}\n  - {name: s, kind: seed, url: 'http://127.0.0.1:8', key_env: K, rate: 1}\norder: auto\n")
	w, err = WorkerFromEnv(env(map[string]string{"ENRICHQ_VENDORS_FILE": min, "K": "k"}))
	if err != nil || w.Vendors.Order != nil || w.Vendors.Explore != 0.05 || w.Vendors.List[0].BatchSize != 80 || w.Vendors.List[0].MinLikelihood != nil ||
		w.Vendor.URL != "http://127.0.0.1:8" {
		t.Fatalf("defaults: %+v, %v", w.Vendors, err)
	}
}

// Without the file, the ENRICHQ_VENDOR_* variables make one seed vendor
// named "vendor", as before.
func TestVendorsFallback(t *testing.T) {
	t.Parallel()
	e := vendorEnv()
	e["ENRICHQ_VENDOR_RPS"], e["ENRICHQ_VENDOR_BULK"], e["ENRICHQ_VENDOR_HONOURS_KEYS"] = "2.5", "false", "true"
	e["ENRICHQ_VENDOR_MONTHLY_CREDITS"], e["ENRICHQ_VENDOR_TIMEOUT"], e["ENRICHQ_VENDOR_BURST"] = "700", "5s", "3"
	w, err := WorkerFromEnv(env(e))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Vendors.List) != 1 || w.Vendors.File != "" || w.Vendors.Order != nil || w.Vendors.Explore != DefaultExplore {
		t.Fatalf("vendors = %+v", w.Vendors)
	}
	s := w.Vendors.List[0]
	want := VendorSpec{Name: "vendor", Kind: VendorSeed, URL: "https://v.example", KeyEnv: "ENRICHQ_VENDOR_KEY", Key: "s3cret", Rate: 2.5, Burst: 3,
		CreditValue: 1, Bulk: false, MonthlyCredits: 700, HonoursKeys: domain.HonoursKeysTrue, PriorHitRate: 0.5, Timeout: 5 * time.Second}
	if s.String() != want.String() || s.Rate != want.Rate || s.Burst != want.Burst || s.CreditValue != 1 || s.Bulk || s.MonthlyCredits != 700 ||
		s.HonoursKeys != want.HonoursKeys || s.Timeout != want.Timeout || s.Key != "s3cret" || s.Account() != w.Vendor.Account() {
		t.Fatalf("fallback = %+v", s)
	}
	a, err := APIFromEnv(env(map[string]string{"ENRICHQ_VENDOR_RPS": "4"}))
	if err != nil || len(a.Vendors.List) != 1 || a.Vendors.List[0].Name != "vendor" || a.Vendors.List[0].Rate != 4 {
		t.Fatalf("API fallback = %+v, %v", a.Vendors, err)
	}
}

// Every problem of a file at once, each naming the file, the entry (index
// and name) and the field; never a key.
func TestVendorsFileErrors(t *testing.T) {
	t.Parallel()
	bad := `
vendors:
  - name: acme
    kind: seed
    url: ftp://api.acme.example
    key_env: ACME_KEY
    rate: 10
    credit_value: 1.5
    credit_vlaue: 2
    batch_size: 50
    prices: {match: 1}
  - name: acme
    kind: pdl
    url: https://user:pdl-secret@api.pdl.example
    key_env: MISSING_KEY
    rate: 0
    credit_value: 0
    honours_keys: true
    prior_hit_rate: 0
    timeout: soon
    min_likelihood: 11
  - name: Bad Name
    kind: clearbit
    key_env: 9X
    bulk: maybe
  - just a string
order: [pdl, acme, acme]
explore: 0.9
`
	f := writeFile(t, bad)
	_, err := WorkerFromEnv(env(map[string]string{"ENRICHQ_VENDORS_FILE": f, "ACME_KEY": "acme-secret"}))
	if err == nil {
		t.Fatal("a bad file accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"vendors[0] (acme): url (line 5): \"ftp://api.acme.example\": want an https URL",
		"vendors[0] (acme): credit_value (line 8): \"1.5\": want a whole number from 1 to 1000000: budgets and the ledger are integers",
		"vendors[0] (acme): unknown field \"credit_vlaue\" (line 9)",
		"vendors[0] (acme): batch_size (line 10): only for kind pdl",
		"vendors[0] (acme): prices (line 11): unknown class \"match\" for kind seed",
		"vendors[1] (acme): name (line 12): \"acme\" is the name of vendors[0] too",
		"vendors[1] (acme): url (line 14): must not carry credentials",
		"vendors[1] (acme): key_env (line 15): MISSING_KEY is not set",
		"vendors[1] (acme): rate (line 16): \"0\": want requests per second",
		"vendors[1] (acme): credit_value (line 17): \"0\": want a whole number from 1",
		"vendors[1] (acme): honours_keys (line 18): \"true\": a pdl vendor takes no idempotency keys",
		"vendors[1] (acme): prior_hit_rate (line 19)",
		"vendors[1] (acme): timeout (line 20)",
		"vendors[1] (acme): min_likelihood (line 21): \"11\": want a whole number from 1 to 10",
		"vendors[2] (Bad Name): name (line 22): \"Bad Name\": want 1 to 32 of a-z",
		"vendors[2] (Bad Name): kind (line 23): \"clearbit\": want seed, pdl or hunter",
		"vendors[2] (Bad Name): key_env (line 24): \"9X\" is not a variable name",
		"vendors[2] (Bad Name): bulk (line 25): \"maybe\": want true or false",
		"vendors[2] (Bad Name): url (line 22): required",
		"vendors[2] (Bad Name): rate (line 22): required",
		"vendors[3] (line 26): want a mapping of fields",
		"order (line 27): no vendor is named \"pdl\"",
		"order (line 27): \"acme\" named twice",
		"explore (line 28): \"0.9\": want a share from 0 to 0.5",
	} {
		if !strings.Contains(msg, "vendors file "+f+": "+want) {
			t.Errorf("the error does not say:\n  %s\nit says:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("the error shows a key: %s", msg)
	}
}

func TestVendorsFileShape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"empty", "", "empty: want a top-level vendors: list"},
		{"misspelt top level", "vendor:\n  - name: a\n", "line 1: field vendor not found at the top"},
		{"not a list", "vendors: acme\n", "vendors: want a list of at least one vendor"},
		{"no vendors", "vendors: []\n", "vendors: want a list of at least one vendor"},
		{"not YAML", "vendors: [\n", "line 1: did not find expected node content"},
		{"order of another shape", "vendors:\n  - {name: a, kind: seed, url: 'http://x', key_env: K, rate: 1}\norder: {a: 1}\n", "order (line 3): want auto or a list"},
		{"a floor of an unknown kind", "vendors:\n  - name: p\n    kind: pdl\n    url: 'http://127.0.0.1:9'\n    key_env: K\n    rate: 1\n    min_likelihood: {title: 5}\n",
			`vendors[0] (p): min_likelihood (line 7): unknown input kind "title"; the kinds are profile_url, email, name_company, name_domain`},
		{"a floor out of range", "vendors:\n  - name: p\n    kind: pdl\n    url: 'http://127.0.0.1:9'\n    key_env: K\n    rate: 1\n    min_likelihood: {email: 0}\n",
			`vendors[0] (p): min_likelihood (line 7): email: "0": want a whole number from 1 to 10`},
		{"required of an unknown stage", "vendors:\n  - name: p\n    kind: pdl\n    url: 'http://127.0.0.1:9'\n    key_env: K\n    rate: 1\n    required: {verify: emails}\n",
			`vendors[0] (p): required (line 7): unknown stage "verify"; the stages are profile, email, phone`},
		{"required of another shape", "vendors:\n  - name: p\n    kind: pdl\n    url: 'http://127.0.0.1:9'\n    key_env: K\n    rate: 1\n    required: [emails]\n",
			`vendors[0] (p): required (line 7): want a field expression such as work_email, or a mapping of stage`},
	} {
		f := writeFile(t, tc.body)
		_, err := WorkerFromEnv(env(map[string]string{"ENRICHQ_VENDORS_FILE": f, "K": "k"}))
		if err == nil || !strings.Contains(err.Error(), "vendors file "+f+": "+tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	_, err := WorkerFromEnv(env(map[string]string{"ENRICHQ_VENDORS_FILE": filepath.Join(t.TempDir(), "none.yaml")}))
	if err == nil || !strings.Contains(err.Error(), "ENRICHQ_VENDORS_FILE: open ") {
		t.Errorf("a missing file: %v", err)
	}
}

// The file names every vendor: a legacy variable beside it is an error;
// a file of one pdl vendor alone serves the worker and the API.
func TestVendorsFileAndLegacyVariables(t *testing.T) {
	t.Parallel()
	pdlOnly := writeFile(t, "vendors:\n  - {name: p, kind: pdl, url: 'http://127.0.0.1:9', key_env: K, rate: 1}\n")
	e := vendorEnv()
	e["ENRICHQ_VENDORS_FILE"], e["K"], e["ENRICHQ_VENDOR_RPS"] = pdlOnly, "k", "3"
	_, err := WorkerFromEnv(env(e))
	for _, want := range []string{
		"ENRICHQ_VENDOR_URL is set as well as ENRICHQ_VENDORS_FILE", "ENRICHQ_VENDOR_KEY is set as well", "ENRICHQ_VENDOR_RPS is set as well",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("worker error %v does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows a key: %v", err)
	}
	if _, err := APIFromEnv(env(map[string]string{"ENRICHQ_VENDORS_FILE": pdlOnly})); err != nil {
		t.Errorf("the API with a pdl vendor alone: %v", err)
	}
	w, err := WorkerFromEnv(env(map[string]string{"ENRICHQ_VENDORS_FILE": pdlOnly, "K": "k"}))
	if err != nil || len(w.Vendors.List) != 1 || w.Vendors.List[0].Kind != VendorPDL {
		t.Errorf("the worker with a pdl vendor alone: %+v, %v", w.Vendors.List, err)
	}
}
