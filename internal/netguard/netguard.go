// Package netguard keeps the platform's outgoing HTTP calls to addresses
// given by users (webhooks, A2A push targets, partner platforms) off the
// network the platform runs in: loopback, private, link-local and reserved
// addresses are refused, at validation and again at every connection (so a
// name re-pointed later is still refused), unless the operator allows
// private targets.
package netguard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// blockedPrefixes are ranges a call may not reach unless the operator
// allows private targets: besides loopback, private, link-local, multicast and
// unspecified addresses (checked by netip), the shared address space of
// carrier-grade NAT, the reserved ranges, IPv6 site-local addresses, the
// deprecated IPv4-compatible form (::/96), and the local-use NAT64 prefix,
// whose embedded IPv4 address sits where its operator chose.
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("fec0::/10"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// IPv6 forms that carry an IPv4 address which a translator, a relay or the
// host itself delivers to.
var (
	// siit is the IPv4-translated form ::ffff:0:a.b.c.d (RFC 2765).
	siit = netip.MustParsePrefix("::ffff:0:0:0/96")
	// sixToFour is 2002:AABB:CCDD::/48, the 6to4 prefix of a.b.c.d (RFC 3056).
	sixToFour = netip.MustParsePrefix("2002::/16")
	// nat64 is the well-known NAT64 prefix, 64:ff9b::a.b.c.d (RFC 6052).
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// teredo is 2001:0:SSSS:SSSS:flags:port:CCCC:CCCC (RFC 4380): the
	// server's address, and the client's with every bit inverted.
	teredo = netip.MustParsePrefix("2001::/32")
)

// PublicAddr reports whether a call may connect to addr: neither addr nor
// any IPv4 address it embeds (IPv4-mapped, IPv4-translated, 6to4, NAT64,
// Teredo) is internal.
func PublicAddr(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !publicAddr(addr) {
		return false
	}
	for _, v4 := range embeddedIPv4(addr) {
		if !publicAddr(v4) {
			return false
		}
	}
	return true
}

// publicAddr judges one address as it is, without what it embeds.
func publicAddr(addr netip.Addr) bool {
	if !addr.IsValid() || addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() ||
		addr.IsLinkLocalMulticast() || addr.IsInterfaceLocalMulticast() || addr.IsMulticast() || addr.IsUnspecified() {
		return false
	}
	for _, p := range blockedPrefixes {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries (none
// for an IPv4 address or a plain IPv6 one). IPv4-mapped addresses are
// unmapped by the caller.
func embeddedIPv4(addr netip.Addr) []netip.Addr {
	if !addr.Is6() {
		return nil
	}
	b := addr.As16()
	at := func(i int) netip.Addr { return netip.AddrFrom4([4]byte(b[i : i+4])) }
	switch {
	case addr.Is4In6():
		return []netip.Addr{at(12)}
	case siit.Contains(addr), nat64.Contains(addr):
		return []netip.Addr{at(12)}
	case sixToFour.Contains(addr):
		return []netip.Addr{at(2)}
	case teredo.Contains(addr):
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return []netip.Addr{at(4), netip.AddrFrom4(client)}
	}
	return nil
}

// CheckURL validates a target URL when it is given: http or https, a host, no
// credentials, and (unless private targets are allowed) a host that resolves
// to public addresses only.
func CheckURL(ctx context.Context, raw string, allowPrivate bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "url must be an http or https URL with a host")
	}
	if u.User != nil {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "url must not carry credentials")
	}
	if len(raw) > 2048 {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "url is longer than 2048 bytes")
	}
	if allowPrivate {
		return u, nil
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(rctx, "ip", u.Hostname())
	if err != nil || len(addrs) == 0 {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "url host %q does not resolve", u.Hostname())
	}
	for _, a := range addrs {
		if !PublicAddr(a) {
			return nil, mesh.Errorf(mesh.CodeTargetNotAllowed, "url host %q resolves to a loopback, private or otherwise internal address; the operator must start the platform with --allow-private-webhooks to allow it", u.Hostname())
		}
	}
	return u, nil
}

// ErrPrivateTarget is what a connection to an internal address fails with.
var ErrPrivateTarget = fmt.Errorf("target address is not public")

// NewHTTPClient returns a client for calls to user-given targets. It follows no
// redirects (a redirect could lead anywhere), and unless private targets are
// allowed it checks the address of every connection as it is made, so a
// name that resolved to a public address at creation and to an internal one
// later (DNS rebinding) is still refused.
func NewHTTPClient(allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !PublicAddr(ap.Addr()) {
				return ErrPrivateTarget
			}
			return nil
		}
	}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 0,
	}
	return &http.Client{
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
