package metrics

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Listener is a process's internal HTTP listener: /metrics, /healthz,
// /readyz and the /debug/pprof/ profiles. Profiles show the process's
// internals: keep its address off the public network.
type Listener struct {
	srv *http.Server
	// Addr is the address it listens on (a port 0 resolved).
	Addr net.Addr
}

// Listen serves reg's metrics, the probes (/healthz: the process is up;
// /readyz: every check passes) and net/http/pprof on addr until Close.
func Listen(addr string, reg *prometheus.Registry, ready ...Check) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", Handler(reg))
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("GET /readyz", readyz(ready))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	l := &Listener{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, Addr: ln.Addr()}
	go func() { _ = l.srv.Serve(ln) }()
	return l, nil
}

// Close stops serving.
func (l *Listener) Close() error { return l.srv.Close() }
