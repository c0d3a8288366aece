// Package metrics holds what the services share for their Prometheus
// metrics: registering a collector once per process, and the count of the
// events each service publishes.
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// RegisterOrExisting registers c on reg, or returns the collector already
// registered under the same description, so a service started twice in one
// process (tests, restarts) keeps counting on the same series.
func RegisterOrExisting[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// EventsPublished counts a service's published events, by type, in
// a2amesh_events_published_total{service, type} on reg; it is what a
// bus.Publisher calls after each event it stored. A nil reg counts nothing
// (it returns nil). Several publishers of one service share the counter.
func EventsPublished(reg prometheus.Registerer, service string) func(eventType string) {
	if reg == nil {
		return nil
	}
	c := RegisterOrExisting(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "a2amesh_events_published_total",
		Help:        "CloudEvents stored in the event stream, by publishing service and event type.",
		ConstLabels: prometheus.Labels{"service": service},
	}, []string{"type"}))
	return func(eventType string) { c.WithLabelValues(eventType).Inc() }
}
