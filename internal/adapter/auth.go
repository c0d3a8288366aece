package adapter

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// authenticate requires the bearer token, when one is configured, on every
// request but GET /health, which carries nothing worth protecting and serves
// liveness probes.
func (s *Server) authenticate(next http.Handler) http.Handler {
	if s.cfg.AuthToken == "" {
		return next
	}
	// Comparing digests keeps the comparison constant-time whatever the
	// length of the offered token.
	want := sha256.Sum256([]byte(s.cfg.AuthToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			next.ServeHTTP(w, r)
			return
		}
		got := sha256.Sum256([]byte(bearerToken(r)))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			s.log.Warn().Str("remote_addr", r.RemoteAddr).Str("path", r.URL.Path).Msg("request without the right bearer token")
			w.Header().Set("WWW-Authenticate", `Bearer realm="a2a-adapter"`)
			writeFailure(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func bearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// checkAddr enforces seed 000's security boundary on a listen address.
func (s *Server) checkAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if !isLoopbackHost(host) && !s.cfg.AllowRemote {
		return fmt.Errorf("%w: %s", ErrRemoteListen, addr)
	}
	return nil
}

// isLoopbackHost accepts "localhost" and loopback IP literals. Any other
// name could resolve to anything, and an empty host means every interface.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
