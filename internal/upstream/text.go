package upstream

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clip keeps at most n bytes of s's printable text, on one line, so that a
// vendor's (or the platform's) text can go into a message or a log. Every
// adapter's errors clip with it.
func Clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// ErrText is err's text without the URL a *url.Error adds (it holds the
// looked-up input), clipped to one short line.
func ErrText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return Clip(err.Error(), 300)
}

// ParseBaseURL checks an adapter's configured base URL (http or https, a
// host, no credentials, query or fragment) and returns it without a
// trailing slash or the API's version path (version, "/v1"); pkg prefixes
// the errors.
func ParseBaseURL(s, pkg, version string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: base URL %q is not an http(s) URL", pkg, Clip(s, 200))
	}
	if u.User != nil {
		return "", errors.New(pkg + ": base URL must not carry credentials (the API key goes in Config.APIKey)")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s: base URL %q must not carry a query or fragment", pkg, u.Redacted())
	}
	p := strings.TrimSuffix(strings.TrimRight(u.EscapedPath(), "/"), version)
	return u.Scheme + "://" + u.Host + p, nil
}
