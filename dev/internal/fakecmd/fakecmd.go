// Package fakecmd is what the fakes' commands (dev/fakevendor, fakepdl,
// fakehunter, fakeplatform) share: a main that stops on SIGINT or SIGTERM,
// a server that says where it listens and shuts down gracefully, and the
// flags' list and rate syntax. The demo and the bench start these commands
// and wait for their "NAME listening on URL" line, so it is written once.
package fakecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ShutdownTimeout is how long in-flight answers get once a stop is asked.
const ShutdownTimeout = 10 * time.Second

// Main runs a fake's run function with a context canceled by SIGINT or
// SIGTERM, and exits 1 with "name: err" when it fails.
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Serve listens on addr, prints "name listening on http://ADDR" to stdout
// once it accepts connections (port 0 picks a free one), logs "name
// started" with attrs, and serves h until ctx ends; then it shuts down
// gracefully. It returns nil after a clean shutdown.
func Serve(ctx context.Context, name, addr string, h http.Handler, log *slog.Logger, stdout io.Writer, attrs ...any) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "%s listening on %s\n", name, url)
	log.Info(name+" started", append([]any{"url", url}, attrs...)...)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// List splits a comma-separated flag, dropping blanks.
func List(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Rates reads "fr=0.8,com=0.1": rates from 0 to 1 by segment, the
// segment lower-cased.
func Rates(s string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, kv := range List(s) {
		k, v, ok := strings.Cut(kv, "=")
		r, err := strconv.ParseFloat(v, 64)
		if !ok || k == "" || err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("%q: want segment=rate, the rate from 0 to 1", kv)
		}
		out[strings.ToLower(k)] = r
	}
	return out, nil
}
