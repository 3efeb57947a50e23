package metrics

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// Check is one dependency of a process's /readyz: the worker's and the
// scheduler's Postgres and Redis, so that an orchestrator's probes can
// reach processes that serve no API.
type Check struct {
	Name string                          // "postgres", "redis"
	Ping func(ctx context.Context) error // nil when the dependency answers
}

// readyTimeout bounds one readiness answer.
const readyTimeout = 5 * time.Second

// healthz answers 200 while the process serves.
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("ok\n"))
}

// readyz answers 200 when every check passes, else 503 naming the
// dependencies down, one word each (no driver error: addresses and user
// names stay out of an unauthenticated answer).
func readyz(checks []Check) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		var down []string
		for _, c := range checks {
			if err := c.Ping(ctx); err != nil {
				down = append(down, c.Name+" unavailable")
			}
		}
		if len(down) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + strings.Join(down, ", ") + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}
}
