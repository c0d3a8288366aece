package gateway

import (
	"net/http"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
)

// ttlRequest is the optional body of the routes that issue a one-time
// secret (a pairing code, a sign-in link).
type ttlRequest struct {
	// TTLSeconds shortens the secret's lifetime below the default.
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
}

// decodeTTL reads a ttlRequest body and returns its lifetime (0: the
// default). On a bad body it writes the error and returns false.
func (g *Gateway) decodeTTL(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	var in ttlRequest
	if err := decodeBody(w, r, g.cfg.MaxBodyBytes, strict, &in); err != nil {
		g.writeError(w, r, err)
		return 0, false
	}
	if in.TTLSeconds < 0 {
		g.writeError(w, r, mesh.Errorf(mesh.CodeInvalidRequest, "ttl_seconds must be positive"))
		return 0, false
	}
	return time.Duration(in.TTLSeconds) * time.Second, true
}
