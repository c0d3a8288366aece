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

// loopbackOnly refuses, on every endpoint, a request whose Host is not a
// loopback name. A web page can make a browser post to the adapter by
// rebinding a name of its own to 127.0.0.1 (DNS rebinding); the browser then
// sends that name as the Host, which no request meant for a loopback
// adapter carries. An adapter listening beyond loopback (AllowRemote) is
// reached by other names and is guarded by its token instead, which such a
// page cannot know.
func (s *Server) loopbackOnly(next http.Handler) http.Handler {
	if s.cfg.AllowRemote {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopbackHost(hostName(r.Host)) {
			s.log.Warn().Str("remote_addr", r.RemoteAddr).Str("path", r.URL.Path).Msg("request for a Host that is not loopback refused")
			writeFailure(w, http.StatusForbidden, "Host must be a loopback address (127.0.0.1, ::1 or localhost): the adapter answers only requests meant for this machine")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostName is the host of a Host header, without its port or the brackets
// of an IPv6 literal.
func hostName(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
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
