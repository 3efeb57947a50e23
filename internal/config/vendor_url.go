package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// checkVendorURL says what is wrong with a vendor's base URL, or "". It
// must be https: over http anyone in the middle reads the key and writes
// the charge headers. Only a loopback address (a fake on this machine) may
// be spoken to over http, unless allowHTTP (an operator's explicit word for a
// fake on a private network).
func checkVendorURL(s string, allowHTTP bool) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Sprintf("%q: want an https URL", s)
	case u.Scheme == "http" && !allowHTTP && !isLoopback(u.Hostname()):
		return fmt.Sprintf("%q: want https (over http anyone in the middle reads the key and writes the charges); http is taken only on a loopback address", u.Redacted())
	case u.User != nil:
		return "must not carry credentials (the key goes in the variable key_env names)"
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Sprintf("%q: must not carry a query or a fragment", u.Redacted())
	}
	return ""
}

// isLoopback says whether host is a loopback address or localhost.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
