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
// carrier-grade NAT and the reserved ranges.
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
}

// PublicAddr reports whether a call may connect to addr.
func PublicAddr(addr netip.Addr) bool {
	addr = addr.Unmap()
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
