package httpapi

import (
	"log/slog"
	"net/http"
	"time"
)

// Timeouts are the HTTP server's. The routes that need more push their own
// deadlines with http.ResponseController: an upload its read deadline as
// the body arrives (UploadIdleTimeout, UploadTimeout) and its write
// deadline once the body is in; a streamed results download its write
// deadline page by page.
type Timeouts struct {
	// ReadHeader bounds the reading of a request's headers.
	ReadHeader time.Duration
	// Read bounds the reading of a whole request, body included.
	Read time.Duration
	// Write bounds a request from the end of its headers to the end of its
	// answer.
	Write time.Duration
	// Idle bounds a keep-alive connection between requests.
	Idle time.Duration
}

// DefaultTimeouts are the API server's timeouts.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 2 * time.Minute, Idle: 2 * time.Minute}
}

// NewHTTPServer returns a server of h with timeouts t (zero fields take
// DefaultTimeouts'), logging its own errors to log at warn.
func NewHTTPServer(h http.Handler, t Timeouts, log *slog.Logger) *http.Server {
	d := DefaultTimeouts()
	for _, f := range []struct{ v, def *time.Duration }{{&t.ReadHeader, &d.ReadHeader}, {&t.Read, &d.Read}, {&t.Write, &d.Write}, {&t.Idle, &d.Idle}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if log == nil {
		log = slog.Default()
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
