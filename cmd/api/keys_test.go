package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A stored key, created with `api keys create`, lets a tenant in without
// ENRICHQ_API_KEYS; revoked, it is refused at once.
func TestStoredAPIKeys(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"DATABASE_URL": storetest.NewDatabase(t), "REDIS_URL": redisURL(), "ENRICHQ_API_ADDR": "127.0.0.1:0",
		"ENRICHQ_LOG_FORMAT": "json", "ENRICHQ_QUEUE": "test-keys-" + time.Now().Format("150405.000000"),
		"ENRICHQ_API_KEYS": "gamma:key-gamma-0123456789",
	}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"api", "keys", "create", "--tenant", "beta", "--name", "ci"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("create: %v", err)
	}
	key := strings.TrimSpace(out.String())
	if !strings.HasPrefix(key, "eq_") || len(key) < 30 {
		t.Fatalf("key %q", key)
	}
	out.Reset()
	if err := run(ctx, []string{"api", "keys", "create", "--tenant", "beta", "--name", "etl", "--scope", "read"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("create a read key: %v", err)
	}
	readKey := strings.TrimSpace(out.String())
	if err := run(ctx, []string{"api", "keys", "create", "--tenant", "beta", "--scope", "read,root"}, getenv, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "root") {
		t.Fatalf("a key of an unknown scope: %v", err)
	}
	out.Reset()
	if err := run(ctx, []string{"api", "keys", "list"}, getenv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), key) || !strings.Contains(out.String(), "beta") {
		t.Fatalf("list shows the key or lacks the tenant:\n%s", out.String())
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "SCOPES") || !strings.Contains(lines[1], " read ") || !strings.Contains(lines[2], " read,submit ") {
		t.Fatalf("list lacks the scopes (newest first: the read key, then the default one):\n%s", out.String())
	}
	id := strings.Fields(lines[2])[0]

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stdout := &lineWriter{lines: make(chan string, 4)}
	done := make(chan error, 1)
	go func() { done <- run(sctx, []string{"api"}, getenv, stdout, io.Discard) }()
	var base string
	select {
	case line := <-stdout.lines:
		base = strings.TrimPrefix(strings.TrimSpace(line), "api listening on ")
	case err := <-done:
		t.Fatalf("run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not listening")
	}
	do := func(method, key string) int {
		req, _ := http.NewRequest(method, base+"/v1/jobs", strings.NewReader("profile_url\nhttps://platform.example/in/a\n"))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "text/csv")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	get := func() int { return do(http.MethodGet, key) }
	if code := get(); code != http.StatusOK {
		t.Fatalf("with the stored key: %d", code)
	}
	if code := do(http.MethodGet, readKey); code != http.StatusOK {
		t.Fatalf("GET with the read key: %d", code)
	}
	if code := do(http.MethodPost, readKey); code != http.StatusForbidden {
		t.Fatalf("POST with the read key: %d, want 403", code)
	}
	// The tenant of ENRICHQ_API_KEYS exists from the start.
	if tn, err := storetest.Open(t, env["DATABASE_URL"]).GetTenant(ctx, "gamma"); err != nil || tn.ID != "gamma" {
		t.Fatalf("the tenant of ENRICHQ_API_KEYS: %+v, %v", tn, err)
	}
	if err := run(ctx, []string{"api", "keys", "revoke", id}, getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if code := get(); code != http.StatusUnauthorized {
		t.Fatalf("with a revoked key: %d, want 401", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
