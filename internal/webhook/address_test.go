package webhook

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// Every range of both IANA special-purpose registries is refused, at its
// first and last address, at submit (a literal address) and at connect.
func TestSpecialRangesRefused(t *testing.T) {
	t.Parallel()
	for _, r := range SpecialRanges {
		for _, a := range []netip.Addr{r.Prefix.Addr(), lastAddr(r.Prefix)} {
			t.Run(r.Prefix.String()+"/"+a.String(), func(t *testing.T) {
				if r.RFC == "" || r.Name == "" {
					t.Errorf("%s has no name or RFC", r.Prefix)
				}
				if publicAddr(a) {
					t.Errorf("%s (%s, %s) counted as public", a, r.Name, r.RFC)
				}
				if err := publicOnly("tcp", netip.AddrPortFrom(a, 443).String(), nil); !errors.Is(err, errNotPublic) {
					t.Errorf("connect to %s: %v, want refused", a, err)
				}
				host := a.String()
				if a.Is6() {
					host = "[" + host + "]"
				}
				if err := CheckCallbackURL(context.Background(), "https://"+host+"/hook", false); err == nil {
					t.Errorf("callback_url on %s accepted at submit", a)
				}
			})
		}
	}
}

// The ranges the filter once let through, by an address inside each.
func TestFormerlyMissedRangesRefused(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"192.0.0.1", "198.18.0.1", "198.19.255.254", "240.0.0.1", "0.1.2.3", "255.255.255.255",
		"64:ff9b::7f00:1", "64:ff9b:1::a00:1", "2002:7f00:1::1", "2001:0:4136:e378::1", "::ffff:127.0.0.1", "::127.0.0.1",
		"fe80::1%eth0"} {
		if publicAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s counted as public", s)
		}
	}
}

// Public addresses pass, IPv4-mapped ones too.
func TestPublicAddressAllowed(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "192.0.1.1", "198.20.0.1", "223.255.255.254",
		"2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8"} {
		a := netip.MustParseAddr(s)
		if !publicAddr(a) {
			t.Errorf("%s refused", s)
		}
		if err := publicOnly("tcp", netip.AddrPortFrom(a, 443).String(), nil); err != nil {
			t.Errorf("connect to %s: %v", s, err)
		}
	}
	if err := CheckCallbackURL(context.Background(), "https://93.184.216.34/hook", false); err != nil {
		t.Errorf("a public literal address refused: %v", err)
	}
}

// The submit-time refusal of a name says it resolves to a non-public
// address, never which one.
func TestRefusalHidesResolvedAddress(t *testing.T) {
	t.Parallel()
	lookup := func(_ context.Context, _, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.20.30.40")}, nil
	}
	err := checkCallbackURL(context.Background(), "https://hooks.example.test/x", false, lookup)
	if err == nil {
		t.Fatal("a name resolving to a private address accepted")
	}
	if msg := err.Error(); strings.Contains(msg, "10.20.30.40") || !strings.Contains(msg, "non-public") {
		t.Errorf("refusal %q: want it to say non-public without the address", msg)
	}
	if err := checkCallbackURL(context.Background(), "https://hooks.example.test/x", true, lookup); err != nil {
		t.Errorf("allowPrivate: %v", err)
	}
	public := func(context.Context, string, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}
	if err := checkCallbackURL(context.Background(), "https://hooks.example.test/x", false, public); err != nil {
		t.Errorf("a name resolving to a public address refused: %v", err)
	}
}
