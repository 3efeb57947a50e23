package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// The internal listener answers the probes of processes that serve no API
// (worker, scheduler): /healthz while it serves, /readyz from its checks,
// naming what is down without the driver's error.
func TestListenerServesProbes(t *testing.T) {
	t.Parallel()
	redisDown := errors.New("dial tcp 10.1.2.3:6379: secret-host refused")
	var down atomic.Bool
	l, err := Listen("127.0.0.1:0", NewRegistry(),
		Check{Name: "postgres", Ping: func(context.Context) error { return nil }},
		Check{Name: "redis", Ping: func(context.Context) error {
			if down.Load() {
				return redisDown
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + l.Addr.String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := get("/healthz"); st != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", st, body)
	}
	if st, body := get("/readyz"); st != http.StatusOK || body != "ok\n" {
		t.Fatalf("/readyz, all up: %d %q", st, body)
	}
	down.Store(true)
	if st, body := get("/readyz"); st != http.StatusServiceUnavailable || body != "not ready: redis unavailable\n" || strings.Contains(body, "secret") {
		t.Fatalf("/readyz, Redis down: %d %q", st, body)
	}
	if st, _ := get("/metrics"); st != http.StatusOK {
		t.Fatalf("/metrics: %d", st)
	}
}
