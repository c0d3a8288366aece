package netguard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// addrCases are addresses and whether a call may reach them: every refused
// IPv4 range in its own form and in each IPv6 form that carries an IPv4
// address a host or a relay delivers to (IPv4-mapped, IPv4-compatible,
// 6to4, NAT64 well-known and local-use prefixes, Teredo).
var addrCases = []struct {
	addr   string
	public bool
}{
	// Public addresses, plain and embedded.
	{"93.184.216.34", true},
	{"8.8.8.8", true},
	{"2606:4700::1111", true},
	{"2a00:1450:4001:80b::200e", true},
	{"::ffff:8.8.8.8", true},
	{"2002:808:808::1", true},                      // 6to4 of 8.8.8.8
	{"64:ff9b::808:808", true},                     // NAT64 of 8.8.8.8
	{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", true}, // Teredo, server 65.54.227.120, client 8.8.8.8

	// Refused IPv4 ranges.
	{"127.0.0.1", false},
	{"10.0.0.1", false},
	{"172.16.5.4", false},
	{"192.168.0.1", false},
	{"169.254.169.254", false},
	{"100.64.0.1", false},
	{"0.0.0.0", false},
	{"224.0.0.1", false},
	{"240.0.0.1", false},
	{"255.255.255.255", false},
	{"192.0.0.8", false},
	{"198.18.0.1", false},

	// Refused IPv6 ranges.
	{"::1", false},
	{"::", false},
	{"fe80::1", false},
	{"fd12::1", false},
	{"ff02::1", false},
	{"fec0::1", false}, // site-local

	// IPv4-mapped.
	{"::ffff:127.0.0.1", false},
	{"::ffff:169.254.169.254", false},
	{"::ffff:10.1.2.3", false},
	// IPv4-compatible (deprecated, still routed by some stacks).
	{"::127.0.0.1", false},
	{"::169.254.169.254", false},
	{"::10.0.0.1", false},
	// IPv4-translated (SIIT).
	{"::ffff:0:127.0.0.1", false},
	// 6to4 (2002:V4ADDR::/48).
	{"2002:7f00:1::", false},
	{"2002:7f00:1::1", false},
	{"2002:a9fe:a9fe::", false},
	{"2002:a00:1::", false},
	{"2002:c0a8:1::", false},
	{"2002:6440:1::", false},
	{"2002::", false},
	// NAT64 well-known prefix (64:ff9b::/96) and local-use prefix (64:ff9b:1::/48).
	{"64:ff9b::7f00:1", false},
	{"64:ff9b::a9fe:a9fe", false},
	{"64:ff9b::a00:1", false},
	{"64:ff9b:1::7f00:1", false},
	{"64:ff9b:1:ffff::1", false},
	{"64:ff9b:1::808:808", false}, // local-use: where the IPv4 sits is the operator's choice
	// Teredo (2001::/32): the client address is the last 32 bits, inverted.
	{"2001:0:4136:e378:8000:63bf:80ff:fffe", false}, // client 127.0.0.1
	{"2001:0:4136:e378:8000:63bf:5601:5601", false}, // client 169.254.169.254
	{"2001:0:4136:e378:8000:63bf:f5ff:fffe", false}, // client 10.0.0.1
	{"2001:0:7f00:1:8000:63bf:f7f7:f7f7", false},    // server 127.0.0.1
}

func TestPublicAddr_RefusesInternalAddressesInEveryForm(t *testing.T) {
	t.Parallel()
	for _, tc := range addrCases {
		if got := PublicAddr(netip.MustParseAddr(tc.addr)); got != tc.public {
			t.Errorf("PublicAddr(%s) = %v, want %v", tc.addr, got, tc.public)
		}
	}
}

// TestCheckURL_RefusesInternalLiterals: a URL whose host is an address
// literal in any of these forms is refused as TARGET_NOT_ALLOWED before
// anything is stored, with a message that says how to allow it.
func TestCheckURL_RefusesInternalLiterals(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range addrCases {
		host := tc.addr
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		raw := "http://" + host + "/hook"
		_, err := CheckURL(ctx, raw, false)
		if tc.public {
			if err != nil {
				t.Errorf("CheckURL(%s): %v, want accepted", raw, err)
			}
			continue
		}
		var me *mesh.Error
		if !errors.As(err, &me) || me.Code != mesh.CodeTargetNotAllowed || !strings.Contains(me.Message, "allow-private-webhooks") {
			t.Errorf("CheckURL(%s) = %v, want TARGET_NOT_ALLOWED", raw, err)
		}
		if _, err := CheckURL(ctx, raw, true); err != nil {
			t.Errorf("CheckURL(%s) with private targets allowed: %v", raw, err)
		}
	}
}

// TestNewHTTPClient_RefusesEmbeddedLoopbackWhenDialed: the address dialed
// is checked in every form, so a 6to4 or mapped form of loopback never
// connects even when the system would route it.
func TestNewHTTPClient_RefusesEmbeddedLoopbackWhenDialed(t *testing.T) {
	t.Parallel()
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits++
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, host := range []string{"127.0.0.1", "[::ffff:127.0.0.1]", "[2002:7f00:1::1]", "[64:ff9b::7f00:1]", "[::127.0.0.1]"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+host+port+"/hook", nil)
		resp, err := NewHTTPClient(false).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if !errors.Is(err, ErrPrivateTarget) {
			t.Errorf("dial %s: %v, want ErrPrivateTarget", host, err)
		}
	}
	if hits != 0 {
		t.Fatalf("the loopback server was reached %d times", hits)
	}
}

// FuzzPublicAddr: an IPv4 address that is refused stays refused in every
// IPv6 form that carries it, whatever the other bits of that form are, and
// no address netip calls internal is ever public.
func FuzzPublicAddr(f *testing.F) {
	for _, tc := range addrCases {
		b := netip.MustParseAddr(tc.addr).As16()
		f.Add(b[:])
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) != 16 {
			return
		}
		a := netip.AddrFrom16([16]byte(raw))
		if PublicAddr(a) && (a.Unmap().IsLoopback() || a.Unmap().IsPrivate() || a.Unmap().IsLinkLocalUnicast() || a.Unmap().IsUnspecified() || a.Unmap().IsMulticast()) {
			t.Fatalf("PublicAddr(%s) is true for an internal address", a)
		}
		v4 := [4]byte(raw[12:16])
		if PublicAddr(netip.AddrFrom4(v4)) {
			return
		}
		for name, form := range embeddings(v4, [16]byte(raw)) {
			if PublicAddr(form) {
				t.Fatalf("PublicAddr(%s) is true, but it is the %s form of the refused %s", form, name, netip.AddrFrom4(v4))
			}
		}
	})
}

// embeddings builds every IPv6 form of v4, taking the bits the form leaves
// free from noise.
func embeddings(v4 [4]byte, noise [16]byte) map[string]netip.Addr {
	with := func(prefix []byte, at int, v [4]byte) netip.Addr {
		b := noise
		copy(b[:], prefix)
		copy(b[at:], v[:])
		return netip.AddrFrom16(b)
	}
	var inverted [4]byte
	for i, x := range v4 {
		inverted[i] = ^x
	}
	zero12 := make([]byte, 12)
	return map[string]netip.Addr{
		"IPv4-mapped":     with(append(make([]byte, 10), 0xff, 0xff), 12, v4),
		"IPv4-compatible": with(zero12, 12, v4),
		"IPv4-translated": with(append(make([]byte, 8), 0xff, 0xff, 0, 0), 12, v4),
		"6to4":            with([]byte{0x20, 0x02}, 2, v4),
		"NAT64":           with([]byte{0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0}, 12, v4),
		"NAT64 local-use": with([]byte{0, 0x64, 0xff, 0x9b, 0, 1}, 12, v4),
		"Teredo client":   with([]byte{0x20, 0x01, 0, 0}, 12, inverted),
		"Teredo server":   with([]byte{0x20, 0x01, 0, 0}, 4, v4),
	}
}
