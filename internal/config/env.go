package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// reader maps variables onto fields: an unset or empty variable leaves the
// field at its default; one that does not parse leaves it too and adds an
// error naming it. Ranges are validate's.
type reader struct {
	getenv func(string) string
	errs   []error
}

func (r *reader) fail(name, v, want string) {
	r.errs = append(r.errs, fmt.Errorf("%s=%q: want %s", name, v, want))
}

func (r *reader) str(name string, dst *string) {
	if v := r.getenv(name); v != "" {
		*dst = v
	}
}

// url is a base URL: a trailing slash is dropped.
func (r *reader) url(name string, dst *string) {
	if v := strings.TrimRight(r.getenv(name), "/"); v != "" {
		*dst = v
	}
}

func (r *reader) bool(name string, dst *bool) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, v, "true or false")
		return
	}
	*dst = b
}

func (r *reader) int(name string, dst *int) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.fail(name, v, "an integer")
		return
	}
	*dst = n
}

func (r *reader) int64(name string, dst *int64) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.fail(name, v, "an integer")
		return
	}
	*dst = n
}

func (r *reader) float(name string, dst *float64) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		r.fail(name, v, "a number")
		return
	}
	*dst = f
}

func (r *reader) duration(name string, dst *time.Duration) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.fail(name, v, "a positive duration such as 30s or 2m")
		return
	}
	*dst = d
}

// days is a duration that may also be given in whole days ("7d").
func (r *reader) days(name string, dst *time.Duration) {
	v := r.getenv(name)
	n, ok := strings.CutSuffix(v, "d")
	if !ok || v == "" {
		r.duration(name, dst)
		return
	}
	d, err := strconv.Atoi(n)
	if err != nil || d <= 0 {
		r.fail(name, v, "a positive duration such as 7d or 36h")
		return
	}
	*dst = time.Duration(d) * 24 * time.Hour
}

func (r *reader) level(name string, dst *slog.Level) {
	switch v := strings.ToLower(r.getenv(name)); v {
	case "":
	case "debug":
		*dst = slog.LevelDebug
	case "info":
		*dst = slog.LevelInfo
	case "warn":
		*dst = slog.LevelWarn
	case "error":
		*dst = slog.LevelError
	default:
		r.fail(name, v, "debug, info, warn or error")
	}
}

// apiKeys reads "tenant:key[,tenant:key...]" into a map from key to tenant.
// Errors name the entry or the tenant, never a key.
func (r *reader) apiKeys(name string, dst map[string]string) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	for i, pair := range strings.Split(v, ",") {
		tenant, key, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if !ok || tenant == "" || key == "" {
			r.errs = append(r.errs, fmt.Errorf("%s: entry %d is not tenant:key", name, i+1))
			continue
		}
		dst[key] = tenant
	}
}

// inRange returns an error naming the variable when v is outside [lo, hi].
func inRange[T int | int64 | float64](name string, v, lo, hi T) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s=%v: want a value from %v to %v", name, v, lo, hi)
	}
	return nil
}

// optionalInt64 is int64 for a field whose absence means something (nil).
func (r *reader) optionalInt64(name string, dst **int64) {
	if r.getenv(name) == "" {
		return
	}
	var n int64
	before := len(r.errs)
	r.int64(name, &n)
	if len(r.errs) == before {
		*dst = &n
	}
}

// origins reads a comma-separated list of web origins (scheme://host[:port],
// as a browser sends them in Origin), lower-cased, without a trailing slash.
func (r *reader) origins(name string, dst *[]string) {
	v := r.getenv(name)
	if v == "" {
		return
	}
	var out []string
	for _, o := range strings.Split(v, ",") {
		o = strings.TrimSuffix(strings.TrimSpace(o), "/")
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			r.fail(name, o, "origins like https://assistant.example.com (a scheme, a host, a port if any; no path), comma-separated")
			return
		}
		out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	*dst = out
}

func optionalInRange(name string, v *int64, lo, hi int64) error {
	if v == nil {
		return nil
	}
	return inRange(name, *v, lo, hi)
}
