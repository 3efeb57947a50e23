package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// ReadyCheck is one dependency of GET /readyz.
type ReadyCheck struct {
	// Name is what the answer calls it ("postgres", "redis").
	Name string
	// Ping returns nil when the dependency answers.
	Ping func(ctx context.Context) error
}

// readyTimeout bounds the readiness check.
const readyTimeout = 5 * time.Second

// readyz answers 200 "ok" when every dependency answers, else 503 naming
// the ones that do not, one word each: /readyz needs no key, so the
// driver's error (addresses, user names) goes to the log only.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	var down []string
	for _, c := range s.Ready {
		if err := c.Ping(ctx); err != nil {
			s.Log.WarnContext(r.Context(), "not ready", "dependency", c.Name, "err", err)
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
