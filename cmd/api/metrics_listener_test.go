package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// With ENRICHQ_METRICS_ADDR, /metrics and /debug/pprof/ are on that
// listener alone: the API's address (what the chart's public Service
// exposes) answers them 404.
func TestMetricsOnTheInternalListenerOnly(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"DATABASE_URL":         storetest.NewDatabase(t),
		"REDIS_URL":            redisURL(),
		"ENRICHQ_API_ADDR":     "127.0.0.1:0",
		"ENRICHQ_METRICS_ADDR": "127.0.0.1:0",
		"ENRICHQ_API_KEYS":     "acme:test-key-0123",
		"ENRICHQ_QUEUE":        "test-metrics-" + randomSuffix(t),
		"ENRICHQ_LOG_FORMAT":   "json",
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &lineWriter{lines: make(chan string, 4)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"api"}, func(k string) string { return env[k] }, stdout, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	var api, internal string
	for api == "" || internal == "" {
		select {
		case line := <-stdout.lines:
			if a, ok := strings.CutPrefix(line, "api listening on "); ok {
				api = a
			}
			if a, ok := strings.CutPrefix(line, "api metrics on "); ok {
				internal = strings.TrimSuffix(a, "/metrics")
			}
		case err := <-done:
			t.Fatalf("run returned before listening: %v", err)
		case <-time.After(time.Minute):
			t.Fatal("run did not start listening within a minute")
		}
	}
	status := func(url string) int {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for path, want := range map[string]int{"/metrics": http.StatusNotFound, "/debug/pprof/": http.StatusNotFound, "/healthz": http.StatusOK} {
		if got := status(api + path); got != want {
			t.Errorf("the API's address, %s: %d, want %d", path, got, want)
		}
	}
	for _, path := range []string{"/metrics", "/debug/pprof/", "/healthz"} {
		if got := status(internal + path); got != http.StatusOK {
			t.Errorf("the internal listener, %s: %d", path, got)
		}
	}
}
