package ingest

import (
	"strings"
	"testing"
)

func TestCanonicalDomain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want, msg string // msg: part of the refusal when want is ""
	}{
		{"acme.com", "acme.com", ""},
		{"  Acme.COM ", "acme.com", ""},
		{"https://www.acme.com/about?x=1#top", "acme.com", ""},
		{"http://acme.com:8080/", "acme.com", ""},
		{"www.acme.com", "acme.com", ""},
		{"WWW.Acme.co.uk.", "acme.co.uk", ""},
		{"acme.com/careers", "acme.com", ""},
		{"acme.com:443", "acme.com", ""},
		{"shop.acme.com", "shop.acme.com", ""},
		{"www.com", "www.com", ""},
		{"bücher.de", "xn--bcher-kva.de", ""},
		{"https://www.Bücher.DE/", "xn--bcher-kva.de", ""},
		{"münchen.example.", "xn--mnchen-3ya.example", ""},
		{"xn--bcher-kva.de", "xn--bcher-kva.de", ""},
		{"ＡＣＭＥ.com", "acme.com", ""}, // full-width letters map to ASCII
		{"192.168.1.10", "", "IP address"},
		{"http://10.0.0.1/x", "", "IP address"},
		{"[::1]", "", "IP address"},
		{"https://[2001:db8::1]:8443/", "", "IP address"},
		{"localhost", "", "no dot"},
		{"https://intranet/", "", "no dot"},
		{"jane@acme.com", "", "user name"},
		{"ftp://acme.com", "", "scheme"},
		{"acme .com", "", "blank"},
		{"acme..com", "", "not a valid domain"},
		{"-acme.com", "", "not a valid domain"},
		{"acme_corp.com", "", "not a valid domain"},
		{"1.2.3", "", "number"},
		{strings.Repeat("a", 64) + ".com", "", "not a valid domain"},
		{strings.Repeat("abcdefghi.", 26) + "com", "", "at most 253"},
		{"", "", "empty"},
	}
	for _, tt := range tests {
		got, msg := canonicalDomain(tt.in)
		if got != tt.want || (tt.want == "") != (msg != "") || !strings.Contains(msg, tt.msg) {
			t.Errorf("canonicalDomain(%q) = %q, %q; want %q, a message with %q", tt.in, got, msg, tt.want, tt.msg)
		}
	}
}
