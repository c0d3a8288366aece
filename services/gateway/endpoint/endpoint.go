// Package endpoint holds what the gateway's older endpoints (the partner
// routes of seed 003 and the envelope protocol of seed 002) share: what
// the gateway gives each of them, and the shape of their routes, which the
// gateway lists before the endpoints start.
package endpoint

import (
	"net/http"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/runfollow"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/a2aserver"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
	"github.com/a2amesh/a2amesh/services/internal/homes"
)

// Wiring is what the gateway gives an older endpoint: the platform's
// client and streams, and the A2A endpoint's server and authentication,
// which the older endpoints answer over.
type Wiring struct {
	Client *meshapi.Client
	JS     jetstream.JetStream
	// Runs follows the runs a call waits for or a status stream tells.
	Runs *runfollow.Regions
	// Homes tells where agents are homed (nil: one region).
	Homes *homes.Directory
	A2A   *a2aserver.Server
	// Admission authenticates callers and keeps their rate limits.
	Admission *admission.Admission
	Logger    zerolog.Logger
}

// Route is one route of an endpoint of type E, in ServeMux syntax, and the
// method of E that answers it.
type Route[E any] struct {
	Pattern string
	Handler func(E, http.ResponseWriter, *http.Request)
}

// Serve answers one request of the route with the endpoint e.
func (rt Route[E]) Serve(e E, w http.ResponseWriter, r *http.Request) {
	rt.Handler(e, w, r)
}
