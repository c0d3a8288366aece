package webhooks

import (
	meshmetrics "github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the service's Prometheus series.
type metrics struct {
	delivered prometheus.Counter
	failed    prometheus.Counter
	dead      prometheus.Counter
	latency   prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	attempts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "a2amesh_webhook_deliveries_total",
		Help: "Webhook delivery attempts by result: delivered (2xx), failed (anything else; retried), dead_lettered (given up after the retry window).",
	}, []string{"result"})
	latency := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "a2amesh_webhook_delivery_duration_seconds",
		Help:    "Duration of webhook delivery attempts, until the endpoint answered or the attempt failed.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
	})
	if reg != nil {
		attempts = meshmetrics.RegisterOrExisting(reg, attempts)
		latency = meshmetrics.RegisterOrExisting(reg, latency)
	}
	return &metrics{
		delivered: attempts.WithLabelValues("delivered"),
		failed:    attempts.WithLabelValues("failed"),
		dead:      attempts.WithLabelValues("dead_lettered"),
		latency:   latency,
	}
}
