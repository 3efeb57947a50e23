package upstream

import (
	"errors"
	"log/slog"
	"strings"
	"unicode"
)

// Secret is a credential (a vendor's API key) held where a configuration
// may be printed, logged or marshalled: each of those shows only whether
// it is set. Its value goes out only in the request that carries it (see
// [Secret.Header]).
type Secret string

// String is "[REDACTED]", or "(none)" when the secret is empty.
func (s Secret) String() string {
	if s == "" {
		return "(none)"
	}
	return "[REDACTED]"
}

// GoString is String, so that %#v does not print it either.
func (s Secret) GoString() string { return s.String() }

// LogValue logs it as String.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText marshals it as String (JSON, YAML).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Header is the secret as a request header carries it: trimmed, required,
// and without blanks or control characters, which would split or void the
// header. pkg names the client in the error.
func (s Secret) Header(pkg string) (string, error) {
	key := strings.TrimSpace(string(s))
	if key == "" {
		return "", errors.New(pkg + ": API key is required")
	}
	if strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", errors.New(pkg + ": API key holds blanks or control characters")
	}
	return key, nil
}
