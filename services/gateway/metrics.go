package gateway

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpMetrics counts requests by method, route pattern (never the raw path,
// so ids do not multiply the series) and status code.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	if reg == nil {
		return nil
	}
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "a2amesh_http_requests_total",
			Help: "HTTP requests answered by the gateway, by method, route pattern and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "a2amesh_http_request_duration_seconds",
			Help:    "Duration of HTTP requests by method and route pattern (event streams and long polls included).",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"}),
	}
	m.requests = metrics.RegisterOrExisting(reg, m.requests)
	m.duration = metrics.RegisterOrExisting(reg, m.duration)
	return m
}

// observe counts a request; route is the matched pattern ("": none), whose
// method, if any, the method label carries instead.
func (m *httpMetrics) observe(method, route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	route = routePath(route)
	if route == "" {
		route = "unmatched"
	}
	method = methodLabel(method)
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(method, route).Observe(d.Seconds())
}

// methodLabel is the request's method if HTTP defines it, else OTHER: a
// client chooses the method, and must not choose the number of series.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// routeKey carries a holder the router fills with the matched pattern, so the
// middleware around it can label the request.
type routeKey struct{}

func withRouteHolder(r *http.Request) (*http.Request, *string) {
	holder := new(string)
	return r.WithContext(context.WithValue(r.Context(), routeKey{}, holder)), holder
}

func setRoute(r *http.Request, pattern string) {
	if h, ok := r.Context().Value(routeKey{}).(*string); ok {
		*h = pattern
	}
}

// metrics serves GET /metrics in the Prometheus text format.
func (g *Gateway) metricsHandler() http.Handler {
	if g.cfg.Gatherer == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.writeError(w, r, mesh.Errorf(mesh.CodeNotFound, "metrics are not enabled on this gateway"))
		})
	}
	return promhttp.HandlerFor(g.cfg.Gatherer, promhttp.HandlerOpts{})
}
