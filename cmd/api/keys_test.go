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
	if err := run(ctx, []string{"api", "keys", "list"}, getenv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), key) || !strings.Contains(out.String(), "beta") {
		t.Fatalf("list shows the key or lacks the tenant:\n%s", out.String())
	}
	id := strings.Fields(strings.Split(out.String(), "\n")[1])[0]

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
	get := func() int {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/jobs", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("with the stored key: %d", code)
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
