package ingest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Bounds of a DNS name (RFC 1035), checked after the IDNA mapping.
const (
	maxDomainBytes = 253
	maxLabelBytes  = 63
)

// canonicalDomain turns a company's domain or website URL into the bare host
// name the vendor takes and cache keys use: scheme, user, port, path, query
// and a leading "www." dropped, lower case, no trailing dot, an
// internationalised name in its ASCII (punycode) form. An IP address, a name
// without a dot, or one that is not a valid DNS name is refused with a
// message saying why.
func canonicalDomain(raw string) (string, string) {
	const example = " (like acme.com or https://www.acme.com/)"
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", "empty"
	}
	if strings.ContainsAny(s, " \t") {
		return "", "contains a blank: not a domain" + example
	}
	host := s
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/:?#@[") {
		in := s
		if !strings.Contains(s, "://") {
			in = "http://" + s
		}
		u, err := url.Parse(in)
		if err != nil || u.Host == "" {
			return "", "not a domain or website URL" + example
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return "", fmt.Sprintf("scheme %q is not http or https", clip(u.Scheme))
		}
		if u.User != nil {
			return "", "has a user name (an email address?): give the company's website" + example
		}
		host = u.Hostname()
	}
	host = strings.TrimSuffix(host, ".")
	if net.ParseIP(host) != nil {
		return "", fmt.Sprintf("%q is an IP address; give the company's domain name", clip(host))
	}
	ascii, err := idna.Lookup.ToASCII(host)
	if err == nil {
		// A mapping that does not hold on its own output (a replacement
		// character, say) is not a name.
		again, aerr := idna.Lookup.ToASCII(ascii)
		if aerr != nil || again != ascii {
			err = errors.New("not stable")
		}
	}
	if err != nil || !utf8.ValidString(host) {
		return "", fmt.Sprintf("%q is not a valid domain name", clip(host))
	}
	if rest, ok := strings.CutPrefix(ascii, "www."); ok && strings.Contains(rest, ".") {
		ascii = rest
	}
	if !strings.Contains(ascii, ".") {
		return "", fmt.Sprintf("%q has no dot: a company domain looks like acme.com", clip(host))
	}
	if len(ascii) > maxDomainBytes {
		return "", fmt.Sprintf("the domain is %d bytes; a DNS name has at most %d", len(ascii), maxDomainBytes)
	}
	labels := strings.Split(ascii, ".")
	for _, l := range labels {
		if l == "" || len(l) > maxLabelBytes {
			return "", fmt.Sprintf("%q is not a valid domain name (an empty or too long label)", clip(host))
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", fmt.Sprintf("%q is not a domain name: its last label is a number", clip(host))
	}
	return ascii, ""
}
