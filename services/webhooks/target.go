package webhooks

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"

	"github.com/a2amesh/a2amesh/internal/netguard"
)

// Webhook targets are guarded by netguard: no loopback, private, link-local
// or reserved address unless the operator allows private targets.

// publicAddr reports whether a webhook may connect to addr.
func publicAddr(addr netip.Addr) bool { return netguard.PublicAddr(addr) }

// checkURL validates a webhook URL at creation.
func checkURL(ctx context.Context, raw string, allowPrivate bool) (*url.URL, error) {
	return netguard.CheckURL(ctx, raw, allowPrivate)
}

// errPrivateTarget is what a connection to an internal address fails with.
var errPrivateTarget = netguard.ErrPrivateTarget

// newHTTPClient returns the client deliveries go out with.
func newHTTPClient(allowPrivate bool) *http.Client { return netguard.NewHTTPClient(allowPrivate) }
