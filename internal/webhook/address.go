package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// SpecialRange is one entry of the IANA special-purpose address registries
// (https://www.iana.org/assignments/iana-ipv4-special-registry and
// iana-ipv6-special-registry), with the RFC that defines it.
type SpecialRange struct {
	Prefix netip.Prefix
	Name   string
	RFC    string
}

// SpecialRanges are the addresses a callback may not reach: every entry of
// both IANA special-purpose registries, those marked globally reachable too
// (anycast services, NAT64 and 6to4 relays lead somewhere other than the
// receiver a tenant named), plus multicast and, for IPv6, everything outside
// the global unicast space 2000::/3.
var SpecialRanges = []SpecialRange{
	// IPv4 (iana-ipv4-special-registry).
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network"`, "RFC 791, section 3.2"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private use", "RFC 1918"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (carrier-grade NAT)", "RFC 6598"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback", "RFC 1122, section 3.2.1.3"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link local", "RFC 3927"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private use", "RFC 1918"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments", "RFC 6890, section 2.1"},
	{netip.MustParsePrefix("192.0.0.0/29"), "IPv4 service continuity prefix", "RFC 7335"},
	{netip.MustParsePrefix("192.0.0.8/32"), "IPv4 dummy address", "RFC 7600"},
	{netip.MustParsePrefix("192.0.0.9/32"), "port control protocol anycast", "RFC 7723"},
	{netip.MustParsePrefix("192.0.0.10/32"), "traversal using relays around NAT anycast", "RFC 8155"},
	{netip.MustParsePrefix("192.0.0.170/32"), "NAT64/DNS64 discovery", "RFC 8880, RFC 7050"},
	{netip.MustParsePrefix("192.0.0.171/32"), "NAT64/DNS64 discovery", "RFC 8880, RFC 7050"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation (TEST-NET-1)", "RFC 5737"},
	{netip.MustParsePrefix("192.31.196.0/24"), "AS112-v4", "RFC 7535"},
	{netip.MustParsePrefix("192.52.193.0/24"), "automatic multicast tunneling", "RFC 7450"},
	{netip.MustParsePrefix("192.88.99.0/24"), "deprecated 6to4 relay anycast", "RFC 7526"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private use", "RFC 1918"},
	{netip.MustParsePrefix("192.175.48.0/24"), "direct delegation AS112 service", "RFC 7534"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking", "RFC 2544"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation (TEST-NET-2)", "RFC 5737"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation (TEST-NET-3)", "RFC 5737"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved", "RFC 1112, section 4"},
	{netip.MustParsePrefix("255.255.255.255/32"), "limited broadcast", "RFC 8190, RFC 919 section 7"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (iana-multicast-addresses)", "RFC 5771"},

	// IPv6 (iana-ipv6-special-registry).
	{netip.MustParsePrefix("::1/128"), "loopback", "RFC 4291"},
	{netip.MustParsePrefix("::/128"), "unspecified", "RFC 4291"},
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped (checked as the IPv4 address it maps)", "RFC 4291"},
	{netip.MustParsePrefix("64:ff9b::/96"), "IPv4-IPv6 translation (NAT64)", "RFC 6052"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use IPv4/IPv6 translation", "RFC 8215"},
	{netip.MustParsePrefix("100::/64"), "discard-only", "RFC 6666"},
	{netip.MustParsePrefix("100:0:0:1::/64"), "dummy IPv6 prefix", "RFC 9780"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments", "RFC 2928"},
	{netip.MustParsePrefix("2001::/32"), "Teredo", "RFC 4380, RFC 8190"},
	{netip.MustParsePrefix("2001:1::1/128"), "port control protocol anycast", "RFC 7723"},
	{netip.MustParsePrefix("2001:1::2/128"), "traversal using relays around NAT anycast", "RFC 8155"},
	{netip.MustParsePrefix("2001:1::3/128"), "DNS-SD service registration protocol anycast", "RFC 9665"},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking", "RFC 5180"},
	{netip.MustParsePrefix("2001:3::/32"), "automatic multicast tunneling", "RFC 7450"},
	{netip.MustParsePrefix("2001:4:112::/48"), "AS112-v6", "RFC 7535"},
	{netip.MustParsePrefix("2001:10::/28"), "deprecated (previously ORCHID)", "RFC 4843"},
	{netip.MustParsePrefix("2001:20::/28"), "ORCHIDv2", "RFC 7343"},
	{netip.MustParsePrefix("2001:30::/28"), "drone remote ID protocol entity tags", "RFC 9374"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation", "RFC 3849"},
	{netip.MustParsePrefix("2002::/16"), "6to4", "RFC 3056"},
	{netip.MustParsePrefix("2620:4f:8000::/48"), "direct delegation AS112 service", "RFC 7534"},
	{netip.MustParsePrefix("3fff::/20"), "documentation", "RFC 9637"},
	{netip.MustParsePrefix("5f00::/16"), "segment routing (SRv6) SIDs", "RFC 9602"},
	{netip.MustParsePrefix("fc00::/7"), "unique local", "RFC 4193, RFC 8190"},
	{netip.MustParsePrefix("fe80::/10"), "link-local unicast", "RFC 4291"},
	{netip.MustParsePrefix("fec0::/10"), "deprecated site-local", "RFC 3879"},
	{netip.MustParsePrefix("ff00::/8"), "multicast", "RFC 4291"},
}

// globalUnicast6 is the only IPv6 space allocated for global unicast (IANA
// ipv6-address-space, RFC 4291 section 2.4): the rest is reserved.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// publicAddr reports whether ip is a public unicast address: in no range of
// SpecialRanges (an IPv4-mapped IPv6 address is judged as its IPv4 address).
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.Zone() != "" {
		return false
	}
	if ip.Is6() && !globalUnicast6.Contains(ip) {
		return false
	}
	for _, r := range SpecialRanges {
		if r.Prefix.Contains(ip) {
			return false
		}
	}
	return true
}

// errNotPublic is the connect-time refusal. It names no address: the
// record of a delivery is shown to operators, and the address a tenant's
// name resolves to inside the network is none of the tenant's business.
var errNotPublic = errors.New("callback address refused: loopback, private or special-purpose (not a public address)")

// publicOnly is a net.Dialer's Control that refuses, at connect time,
// addresses that are not public: a name that resolves to one (or is
// rebound to one after the submit check) is refused too.
func publicOnly(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	if !publicAddr(ap.Addr()) {
		return errNotPublic
	}
	return nil
}

// CheckCallbackURL refuses, at submit, a callback URL whose host is (or
// resolves to) an address that is not public (SpecialRanges), unless
// allowPrivate. The refusal never names the address a name resolved to:
// that would let a tenant map the network enrichq runs in. A name that does
// not resolve now is accepted: the connect-time check guards it.
func CheckCallbackURL(ctx context.Context, raw string, allowPrivate bool) error {
	return checkCallbackURL(ctx, raw, allowPrivate, net.DefaultResolver.LookupNetIP)
}

// lookupFunc resolves a host name (net.Resolver.LookupNetIP).
type lookupFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func checkCallbackURL(ctx context.Context, raw string, allowPrivate bool, lookup lookupFunc) error {
	if raw == "" || allowPrivate {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return fmt.Errorf("callback_url %s points at this machine", host)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !publicAddr(ip) {
			return fmt.Errorf("callback_url %s is a loopback, private or special-purpose address, not a public one", host)
		}
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := lookup(rctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if !publicAddr(a) {
			return fmt.Errorf("callback_url host %s resolves to a non-public address (loopback, private or special-purpose)", host)
		}
	}
	return nil
}
