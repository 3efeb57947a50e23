package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.APIAddr != "127.0.0.1:8080" || c.VendorRPS != 10 || !c.VendorBulk || !c.Migrate || c.ChunkSize != 100 ||
		c.Lease != 2*time.Minute || c.QueuePoll != 100*time.Millisecond || !c.CacheRaw || len(c.APIKeys) != 0 || !strings.Contains(c.DatabaseURL, "/enrichq") {
		t.Fatalf("defaults = %+v", c)
	}
	if err := c.RequireVendor(); err == nil {
		t.Fatal("RequireVendor passed without a vendor")
	}
}

func TestLoadParsesAndValidates(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{
		"ENRICHQ_API_KEYS": "acme:key-acme-1, beta:key-beta-2", "ENRICHQ_VENDOR_RPS": "2.5", "ENRICHQ_VENDOR_BULK": "false",
		"ENRICHQ_MIGRATE": "false", "ENRICHQ_LEASE": "45s", "ENRICHQ_VENDOR_URL": "http://v.example/", "ENRICHQ_VENDOR_KEY": "s3cret",
		"ENRICHQ_QUEUE_POLL": "250ms", "ENRICHQ_CACHE_RAW": "false",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.APIKeys["key-acme-1"] != "acme" || c.APIKeys["key-beta-2"] != "beta" || c.VendorRPS != 2.5 || c.VendorBulk || c.Migrate ||
		c.Lease != 45*time.Second || c.QueuePoll != 250*time.Millisecond || c.CacheRaw || c.VendorURL != "http://v.example" || c.RequireVendor() != nil {
		t.Fatalf("parsed = %+v", c)
	}
	_, err = Load(env(map[string]string{"ENRICHQ_API_KEYS": "nokey", "ENRICHQ_VENDOR_RPS": "fast", "ENRICHQ_LEASE": "1s",
		"ENRICHQ_LOG_FORMAT": "xml", "ENRICHQ_CHUNK_SIZE": "0", "ENRICHQ_QUEUE_POLL": "1m"}))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for _, want := range []string{"ENRICHQ_API_KEYS", "ENRICHQ_VENDOR_RPS", "ENRICHQ_LEASE", "ENRICHQ_LOG_FORMAT", "ENRICHQ_CHUNK_SIZE", "ENRICHQ_QUEUE_POLL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
