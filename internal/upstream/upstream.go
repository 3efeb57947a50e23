// Package upstream is the call kit every client of an upstream service
// shares: the vendors' adapters (internal/enrich and its packages) and the
// platform's client (internal/platform/platformapi). It holds what each
// of them did alike: the call itself ([Caller.Do]: the request sent under
// the timeout, a bounded body, its failures as an [*Error]), the default
// timeout and User-Agent, no redirects, a checked base URL, the code of a
// transport error, the secret redacted from any text, and the clipping of
// an upstream's text to one line.
package upstream

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"
)

// Defaults of an upstream client.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultUserAgent = "enrichq"
)

// TransportCode names a call that got no (complete) answer: "canceled"
// (its context was), "timeout" (its deadline or the client's passed), else
// "network_error" (a reset, a refused connection).
func TransportCode(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "network_error"
}

// Redact removes secret (an API key, a token) from s: an upstream may echo
// what it was sent.
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[REDACTED]")
}
