package platformapi

import (
	"errors"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// clip keeps at most n bytes of s's printable text, on one line, so that
// an answer's text can go into a message or a log.
func clip(s string, n int) string {
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

// errText is err's text without the URL a *url.Error adds, clipped to one
// short line.
func errText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return clip(err.Error(), 300)
}
