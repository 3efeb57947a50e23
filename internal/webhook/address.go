package webhook

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// publicAddr reports whether ip is a public unicast address.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() &&
		!netip.MustParsePrefix("100.64.0.0/10").Contains(ip) // carrier-grade NAT
}

// publicOnly is a net.Dialer's Control that refuses, at connect time,
// addresses on loopback and private networks: a name that resolves there
// (or is rebound there after the submit check) is refused too.
func publicOnly(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	if !publicAddr(ap.Addr()) {
		return fmt.Errorf("callback address %s is on a loopback or private network", ap.Addr())
	}
	return nil
}

// CheckCallbackURL refuses, at submit, a callback URL whose host is (or
// resolves to) a loopback or private address, unless allowPrivate. A name
// that does not resolve now is accepted: the connect-time check guards it.
func CheckCallbackURL(ctx context.Context, raw string, allowPrivate bool) error {
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
			return fmt.Errorf("callback_url %s is a loopback or private address", host)
		}
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(rctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if !publicAddr(a) {
			return fmt.Errorf("callback_url %s resolves to %s, a loopback or private address", host, a)
		}
	}
	return nil
}
