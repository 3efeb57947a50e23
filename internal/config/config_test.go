package config

import (
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func vendorEnv() map[string]string {
	return map[string]string{"ENRICHQ_VENDOR_URL": "https://v.example/", "ENRICHQ_VENDOR_KEY": "s3cret"}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	a, err := APIFromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if a.Addr != DefaultAPIAddr || a.VendorRPS != 10 || !a.VendorBulk || !a.Migrate || a.Queue != "enrichq" || len(a.Keys) != 0 ||
		!strings.Contains(a.DatabaseURL, "/enrichq") || a.StatusCache != DefaultStatusCache || a.MaxRows != 1_000_000 ||
		a.MaxUploadBytes != 64<<20 || a.ShutdownTimeout != 30*time.Second || a.Platform.Enabled() || a.Webhooks.Enabled() || a.BehindTLSProxy {
		t.Fatalf("API defaults = %+v", a)
	}
	if _, err := WorkerFromEnv(env(nil)); err == nil || !strings.Contains(err.Error(), "ENRICHQ_VENDOR_URL and ENRICHQ_VENDOR_KEY are required") {
		t.Fatalf("a worker without a vendor: %v", err)
	}
	w, err := WorkerFromEnv(env(vendorEnv()))
	if err != nil {
		t.Fatal(err)
	}
	if w.Vendor.RPS != 10 || w.Vendor.Burst != 1 || !w.Vendor.Bulk || w.Vendor.HonoursKeys != domain.HonoursKeysAuto || w.Vendor.Timeout != 30*time.Second ||
		w.Vendor.Allowance() != nil || w.Concurrency != 10 || w.Vendor.URL != "https://v.example" || w.MetricsAddr != "" {
		t.Fatalf("worker defaults = %+v", w)
	}
	s, err := SchedulerFromEnv(env(nil))
	if err != nil || s.Queue != "enrichq" || s.Webhooks.Enabled() || s.SweepInterval != 0 {
		t.Fatalf("scheduler defaults = %+v, %v", s, err)
	}
}

func TestParses(t *testing.T) {
	t.Parallel()
	e := vendorEnv()
	for k, v := range map[string]string{
		"ENRICHQ_API_KEYS": "acme:key-acme-1, beta:key-beta-2", "ENRICHQ_VENDOR_RPS": "2.5", "ENRICHQ_VENDOR_BULK": "false",
		"ENRICHQ_MIGRATE": "false", "ENRICHQ_QUEUE": "q2", "ENRICHQ_VENDOR_MONTHLY_CREDITS": "5000", "ENRICHQ_LOG_LEVEL": "DEBUG",
		"ENRICHQ_METRICS_ADDR": "127.0.0.1:0", "ENRICHQ_SHUTDOWN_TIMEOUT": "5s", "ENRICHQ_WORKER_CONCURRENCY": "3",
		"ENRICHQ_BEHIND_TLS_PROXY": "true", "ENRICHQ_MIGRATE_DATABASE_URL": "postgres://owner@db/enrichq",
	} {
		e[k] = v
	}
	a, err := APIFromEnv(env(e))
	if err != nil {
		t.Fatal(err)
	}
	if a.Keys["key-acme-1"] != "acme" || a.Keys["key-beta-2"] != "beta" || a.VendorRPS != 2.5 || a.VendorBulk || a.Migrate ||
		a.Queue != "q2" || a.ShutdownTimeout != 5*time.Second || a.MetricsAddr != "127.0.0.1:0" || !a.BehindTLSProxy ||
		a.MigrateDatabaseURL != "postgres://owner@db/enrichq" {
		t.Fatalf("API = %+v", a)
	}
	w, err := WorkerFromEnv(env(e))
	if err != nil {
		t.Fatal(err)
	}
	if w.Vendor.RPS != 2.5 || w.Vendor.Bulk || *w.Vendor.Allowance() != 5000 || w.Concurrency != 3 || w.LogLevel.String() != "DEBUG" ||
		w.Vendor.Account() != VendorAccount("s3cret") || len(w.Vendor.Account()) != 12 {
		t.Fatalf("worker = %+v", w)
	}
	l, err := LedgerFromEnv(env(e))
	if err != nil || l.VendorAccount() != w.Vendor.Account() || *l.Allowance() != 5000 {
		t.Fatalf("ledger = %+v, %v", l, err)
	}
	if VendorAccount("") != "" {
		t.Error("an account without a key")
	}
}

// Every problem is reported at once, each naming its variable, and a
// secret is never quoted.
func TestValidateNamesEveryVariable(t *testing.T) {
	t.Parallel()
	e := map[string]string{"ENRICHQ_API_KEYS": "nokey,acme:short1", "ENRICHQ_VENDOR_RPS": "fast", "ENRICHQ_LOG_FORMAT": "xml",
		"ENRICHQ_LOG_LEVEL": "loud", "ENRICHQ_MAX_ROWS": "0", "ENRICHQ_MAX_UPLOAD_BYTES": "12", "ENRICHQ_MIGRATE": "perhaps",
		"ENRICHQ_SHUTDOWN_TIMEOUT": "-1s", "ENRICHQ_VENDOR_BURST": "0", "ENRICHQ_WORKER_CONCURRENCY": "many",
		"ENRICHQ_ERASURE_KEY": "too-short-secret", "ENRICHQ_VENDOR_HONOURS_KEYS": "sometimes"}
	_, err := APIFromEnv(env(e))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for _, want := range []string{"ENRICHQ_API_KEYS: entry 1", `tenant "acme" is shorter`, "ENRICHQ_VENDOR_RPS", "ENRICHQ_LOG_FORMAT",
		"ENRICHQ_LOG_LEVEL", "ENRICHQ_MAX_ROWS", "ENRICHQ_MAX_UPLOAD_BYTES", "ENRICHQ_MIGRATE", "ENRICHQ_SHUTDOWN_TIMEOUT",
		"ENRICHQ_ERASURE_KEY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("API error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "short1") || strings.Contains(err.Error(), "too-short-secret") {
		t.Errorf("the error shows a key: %v", err)
	}
	_, err = WorkerFromEnv(env(e))
	for _, want := range []string{"ENRICHQ_VENDOR_RPS", "ENRICHQ_VENDOR_BURST", "ENRICHQ_WORKER_CONCURRENCY", "ENRICHQ_VENDOR_URL", "ENRICHQ_VENDOR_HONOURS_KEYS",
		"ENRICHQ_ERASURE_KEY"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("worker error %v does not name %s", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "too-short-secret") {
		t.Errorf("the worker's error shows the erasure key: %v", err)
	}
}

// Callbacks are on with ENRICHQ_WEBHOOKS, and still with the shared secret
// of old (which signs nothing any more).
func TestWebhooksSwitch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{"ENRICHQ_WEBHOOKS": "true"}, true},
		{map[string]string{"ENRICHQ_WEBHOOKS": "false"}, false},
		{map[string]string{"ENRICHQ_WEBHOOK_SECRET": "old-shared"}, true},
	} {
		s, err := SchedulerFromEnv(env(c.env))
		if err != nil || s.Webhooks.Enabled() != c.want {
			t.Errorf("%v: enabled %v (%v), want %v", c.env, s.Webhooks.Enabled(), err, c.want)
		}
	}
}

// A tenant's watches are bounded by default (20, 10 an hour, a run asked
// for now once an hour), and each bound is set by its variable and checked.
func TestWatchLimits(t *testing.T) {
	t.Parallel()
	a, err := APIFromEnv(env(map[string]string{}))
	if err != nil || a.Watches.MaxPerTenant != 20 || a.Watches.CreatesPerHour != 10 || a.Watches.RunInterval != time.Hour {
		t.Fatalf("defaults %+v, %v", a.Watches, err)
	}
	a, err = APIFromEnv(env(map[string]string{"ENRICHQ_MAX_WATCHES": "3", "ENRICHQ_WATCH_CREATES_PER_HOUR": "2", "ENRICHQ_WATCH_RUN_INTERVAL": "10m"}))
	if err != nil || a.Watches.MaxPerTenant != 3 || a.Watches.CreatesPerHour != 2 || a.Watches.RunInterval != 10*time.Minute {
		t.Fatalf("set %+v, %v", a.Watches, err)
	}
	_, err = APIFromEnv(env(map[string]string{"ENRICHQ_MAX_WATCHES": "0", "ENRICHQ_WATCH_CREATES_PER_HOUR": "-1", "ENRICHQ_WATCH_RUN_INTERVAL": "1ms"}))
	for _, want := range []string{"ENRICHQ_MAX_WATCHES=0", "ENRICHQ_WATCH_CREATES_PER_HOUR=-1", "ENRICHQ_WATCH_RUN_INTERVAL=1ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

// The upload slots are set from the environment (the chart sets them to
// what its pod's memory and disk hold); unset, the service's defaults.
func TestUploadSlotsFromEnv(t *testing.T) {
	t.Parallel()
	e := vendorEnv()
	a, err := APIFromEnv(env(e))
	if err != nil || a.UploadsTotal != 0 || a.UploadsPerTenant != 0 {
		t.Fatalf("defaults: %d total, %d a tenant, %v", a.UploadsTotal, a.UploadsPerTenant, err)
	}
	e["ENRICHQ_UPLOADS_TOTAL"], e["ENRICHQ_UPLOADS_PER_TENANT"] = "4", "2"
	if a, err = APIFromEnv(env(e)); err != nil || a.UploadsTotal != 4 || a.UploadsPerTenant != 2 {
		t.Fatalf("set: %d total, %d a tenant, %v", a.UploadsTotal, a.UploadsPerTenant, err)
	}
	e["ENRICHQ_UPLOADS_TOTAL"], e["ENRICHQ_UPLOADS_PER_TENANT"] = "-1", "some"
	_, err = APIFromEnv(env(e))
	if err == nil || !strings.Contains(err.Error(), "ENRICHQ_UPLOADS_TOTAL") || !strings.Contains(err.Error(), "ENRICHQ_UPLOADS_PER_TENANT") {
		t.Fatalf("bad values: %v", err)
	}
}

// The legacy vendor URL is held to https as a vendors file's is: http only
// on loopback, or anywhere with the operator's explicit ENRICHQ_VENDOR_ALLOW_HTTP.
func TestLegacyVendorURLWantsHTTPS(t *testing.T) {
	for _, c := range []struct {
		url, allow string
		ok         bool
	}{
		{"https://vendor.example", "", true},
		{"http://127.0.0.1:9090", "", true},
		{"http://localhost:9090", "", true},
		{"http://fakevendor:9090", "", false},
		{"http://fakevendor:9090", "true", true},
		{"ftp://vendor.example", "true", false},
	} {
		e := map[string]string{"ENRICHQ_VENDOR_URL": c.url, "ENRICHQ_VENDOR_KEY": "s3cret"}
		if c.allow != "" {
			e["ENRICHQ_VENDOR_ALLOW_HTTP"] = c.allow
		}
		_, err := WorkerFromEnv(env(e))
		if c.ok != (err == nil) {
			t.Errorf("%s (allow %q): err = %v, want ok %v", c.url, c.allow, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "ENRICHQ_VENDOR_URL") {
			t.Errorf("%s: the error does not name the variable: %v", c.url, err)
		}
	}
}
