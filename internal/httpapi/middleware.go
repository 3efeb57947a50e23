package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// requestInfo collects what the request log needs from inner handlers.
type requestInfo struct {
	tenant  string
	errCode string
}

type infoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	i, _ := ctx.Value(infoKey{}).(*requestInfo)
	return i
}

// logRequests logs one line per request: method, route pattern, path,
// status, bytes, duration and tenant. Never headers: the Authorization
// header is a secret.
func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{}
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		defer func() {
			// Runs after recoverPanics (inside) has answered, and on
			// http.ErrAbortHandler, which it lets through: log, then go on
			// panicking so the server cuts the connection.
			aborted := recover()
			if aborted != nil {
				defer panic(aborted)
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			route := r.Pattern // set by the mux on this request
			if route == "" {
				route = "unmatched"
			}
			level := slog.LevelInfo
			if status >= 500 && status != statusClientClosed {
				level = slog.LevelError
			}
			attrs := []slog.Attr{
				slog.String("method", r.Method),
				slog.String("route", route),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.Int64("bytes", sw.bytes),
				slog.Duration("duration", time.Since(start)),
			}
			if info.tenant != "" {
				attrs = append(attrs, slog.String("tenant", info.tenant))
			}
			if aborted != nil {
				level = slog.LevelWarn
				attrs = append(attrs, slog.Bool("aborted", true))
			}
			if info.errCode != "" {
				attrs = append(attrs, slog.String("error_code", info.errCode))
			}
			s.Log.LogAttrs(r.Context(), level, "http request", attrs...)
			s.Metrics.Request(route, r.Method, status, time.Since(start))
		}()
		next.ServeHTTP(sw, r)
	})
}

// recoverPanics turns a panic into a 500 (or, once the answer has begun, an
// aborted connection) and logs it with its stack.
func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw, _ := w.(*statusWriter)
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.Log.ErrorContext(r.Context(), "panic serving a request", "method", r.Method, "path", r.URL.Path,
				"panic", v, "stack", string(debug.Stack()))
			if sw != nil && sw.status != 0 {
				// Part of the answer is out: cut the connection so the
				// client sees a broken response, not a short one.
				panic(http.ErrAbortHandler)
			}
			s.writeError(w, r, errorf(http.StatusInternalServerError, "internal", "internal error"))
		}()
		next.ServeHTTP(w, r)
	})
}

// statusWriter records the status and size of an answer. Unwrap lets
// http.ResponseController reach the connection (Flush, SetReadDeadline).
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
