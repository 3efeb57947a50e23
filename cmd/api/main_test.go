package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

func redisURL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// lineWriter hands each line written to it to a channel.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case w.lines <- string(w.buf[:i]):
		default: // nobody listens: drop
		}
		w.buf = w.buf[i+1:]
	}
}

func TestRunServesUntilCanceled(t *testing.T) {
	t.Parallel()
	var b [6]byte
	_, _ = rand.Read(b[:])
	queue := "test-" + hex.EncodeToString(b[:])
	env := map[string]string{
		"DATABASE_URL":       storetest.NewDatabase(t),
		"REDIS_URL":          redisURL(),
		"ENRICHQ_API_ADDR":   "127.0.0.1:0",
		"ENRICHQ_API_KEYS":   "acme:test-key-0123",
		"ENRICHQ_QUEUE":      queue,
		"ENRICHQ_LOG_FORMAT": "json",
	}
	t.Cleanup(func() {
		insp := asynq.NewInspector(mustRedisOpt(t))
		defer insp.Close()
		if err := insp.DeleteQueue(queue, true); err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
			t.Errorf("delete queue: %v", err)
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := &lineWriter{lines: make(chan string, 4)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"api"}, func(k string) string { return env[k] }, stdout, io.Discard) }()

	var base string
	select {
	case line := <-stdout.lines:
		addr, ok := strings.CutPrefix(line, "api listening on ")
		if !ok {
			t.Fatalf("first stdout line %q", line)
		}
		base = addr
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("run did not start listening within a minute")
	}

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("readyz: %d %q", code, body)
	}
	// The wiring works end to end: a job is stored and its chunk queued.
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/jobs", strings.NewReader(`{"rows": [{"email": "jane@example.com"}]}`))
	req.Header.Set("Authorization", "Bearer test-key-0123")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d", resp.StatusCode)
	}
	// /metrics counts requests by route pattern and status.
	code, body := get("/metrics")
	if code != http.StatusOK || !strings.Contains(body, `enrichq_http_requests_total{method="POST",route="POST /v1/jobs",status="201"} 1`) ||
		!strings.Contains(body, `route="GET /healthz"`) {
		t.Fatalf("metrics: %d\n%s", code, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("run did not stop within a minute of its context ending")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("still serving after run returned")
	}
}

func TestRunRefusesWithoutKeys(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": storetest.NewDatabase(t), "REDIS_URL": redisURL()}
	err := run(context.Background(), []string{"api"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "ENRICHQ_API_KEYS") {
		t.Fatalf("err = %v, want one naming ENRICHQ_API_KEYS", err)
	}
}

func mustRedisOpt(t *testing.T) asynq.RedisConnOpt {
	t.Helper()
	opt, err := asynq.ParseRedisURI(redisURL())
	if err != nil {
		t.Fatal(err)
	}
	return opt
}
