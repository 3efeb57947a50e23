package enrichtest

// Helpers both fakes use: deterministic draws from hashed inputs, and the
// ways an answer is cut short.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"net"
	"net/http"
	"strings"
	"time"
)

// hash is a stable 64-bit hash of parts.
func hash(parts ...string) uint64 {
	s := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return binary.BigEndian.Uint64(s[:8])
}

// unit maps h onto [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

func pick(list []string, h uint64) string { return list[h%uint64(len(list))] }

// normURL ignores case, scheme, "www.", query, fragment and trailing slashes.
func normURL(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
	s = strings.TrimPrefix(s, "www.")
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, "/")
}

// normText ignores case and runs of blanks.
func normText(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

func ptr[T any](v T) *T { return &v }

// reset closes the connection without an answer (a TCP reset where possible).
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // HTTP/2: abort the stream
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
