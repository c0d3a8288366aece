package gateway

import (
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/inflight"
	"go.opentelemetry.io/otel/trace"
)

var tracer = tracing.Tracer("gateway")

// middleware recovers panics, makes the request's server span (continuing
// the caller's trace from a valid W3C traceparent, so it reaches the bus
// requests and events the request causes), and logs one line per request:
// method, route, status and duration, never headers or bodies.
func (g *Gateway) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		r, route := withRouteHolder(r)
		r, release := g.bodies.Track(r)
		defer release()
		var span trace.Span
		if traced(r) {
			r, span = tracing.StartHTTPServer(r, tracer, r.Method)
		}
		defer func() {
			if p := recover(); p != nil {
				g.log.Error().Ctx(r.Context()).Interface("panic", p).Bytes("stack", debug.Stack()).Str("path", r.URL.Path).Msg("handler panicked")
				if !rw.wrote {
					g.writeError(rw, r, mesh.Errorf(mesh.CodeInternal, "internal error"))
				}
			}
			if span != nil {
				pattern := *route
				if pattern == "" {
					pattern = r.Pattern
				}
				tracing.EndHTTPServer(span, r.Method, routePath(pattern), rw.status)
			}
			g.metrics.observe(r.Method, *route, rw.status, time.Since(start))
			g.log.Debug().Ctx(r.Context()).Str("method", r.Method).Str("path", r.URL.Path).Int("status", rw.status).
				Dur("duration_ms", time.Since(start)).Msg("http request")
		}()
		if err := g.takeTurn(rw, r); err != nil {
			g.writeError(rw, r, err)
			return
		}
		next.ServeHTTP(rw, r)
	})
}

// takeTurn takes the turn of a large body for the routes of the platform's
// own API (its REST routes, runtimes' uploads): the A2A doors below /a2a
// take theirs themselves, once they know the caller, and answer a refusal
// in their protocol's shape.
func (g *Gateway) takeTurn(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Path == "/a2a" || strings.HasPrefix(r.URL.Path, "/a2a/") {
		return nil
	}
	if err := inflight.Take(w, r, inflight.Anonymous(r)); err != nil {
		return mesh.Errorf(mesh.CodeRateLimited, "%v", err)
	}
	return nil
}

// traced reports whether a request gets a server span: any request within
// a trace, and any other but the health and metrics probes and a
// runtime's own requests (heartbeats and long polls, which would each
// start a trace of their own).
func traced(r *http.Request) bool {
	if tracing.HasTraceParent(r.Header) {
		return true
	}
	switch r.URL.Path {
	case "/healthz", "/readyz", "/metrics":
		return false
	}
	return r.Header.Get(HeaderRuntimeToken) == ""
}

// routePath is a route's pattern without its method ("POST /task-runs"
// becomes "/task-runs").
func routePath(route string) string {
	if _, path, ok := strings.Cut(route, " "); ok {
		return path
	}
	return route
}

// statusWriter remembers the status written, for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.wrote {
		w.status, w.wrote = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Flush lets event streams through the wrapper.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
