package gateway

import (
	"net/http"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

var traceParentPattern = regexp.MustCompile(`^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// middleware recovers panics, carries a valid W3C traceparent into the
// request context (and so onto events), and logs one line per request:
// method, route, status and duration, never headers or bodies.
func (g *Gateway) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		r, route := withRouteHolder(r)
		defer func() {
			if p := recover(); p != nil {
				g.log.Error().Interface("panic", p).Bytes("stack", debug.Stack()).Str("path", r.URL.Path).Msg("handler panicked")
				if !rw.wrote {
					g.writeError(rw, r, mesh.Errorf(mesh.CodeInternal, "internal error"))
				}
			}
			g.metrics.observe(*route, rw.status, time.Since(start))
			g.log.Debug().Str("method", r.Method).Str("path", r.URL.Path).Int("status", rw.status).
				Dur("duration", time.Since(start)).Msg("http request")
		}()
		if tp := r.Header.Get("traceparent"); traceParentPattern.MatchString(tp) {
			r = r.WithContext(bus.WithTraceParent(r.Context(), tp))
		}
		next.ServeHTTP(rw, r)
	})
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
