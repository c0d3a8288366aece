package runtimeengine

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the runtime's Prometheus series. A nil *Metrics records nothing.
type Metrics struct {
	started           prometheus.Counter
	completed         prometheus.Counter
	failed            prometheus.Counter
	adapterLatency    prometheus.Histogram
	heartbeatFailures prometheus.Counter
	givenBack         prometheus.Counter
	adapterUp         prometheus.Gauge
}

// NewMetrics registers the runtime's series on reg. The outbox gauge reads
// the ledger's backlog when scraped (nil ledger: no gauge).
func NewMetrics(reg prometheus.Registerer, led *ledger.Ledger) *Metrics {
	tasks := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "a2amesh_runtime_tasks_total",
		Help: "Task runs this runtime worked on, by outcome: started, completed (reported complete), failed (reported failed), given_back (the adapter could not be reached; back to the queue).",
	}, []string{"outcome"})
	m := &Metrics{
		started:   tasks.WithLabelValues("started"),
		completed: tasks.WithLabelValues("completed"),
		failed:    tasks.WithLabelValues("failed"),
		givenBack: tasks.WithLabelValues("given_back"),
		adapterUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "a2amesh_runtime_adapter_ready",
			Help: "1 while the local adapter answers GET /health, 0 while it does not (no task runs are claimed then).",
		}),
		adapterLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "a2amesh_runtime_adapter_call_seconds",
			Help:    "Duration of run-task calls to the local adapter.",
			Buckets: prometheus.ExponentialBuckets(0.01, 3, 12),
		}),
		heartbeatFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "a2amesh_runtime_heartbeat_failures_total",
			Help: "Heartbeats the platform did not accept.",
		}),
	}
	m.adapterUp.Set(1)
	reg.MustRegister(tasks, m.adapterLatency, m.heartbeatFailures, m.adapterUp)
	if led != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "a2amesh_runtime_outbox_reports",
			Help: "Reports kept in the local outbox because the platform could not take them yet.",
		}, func() float64 {
			n, err := led.Backlog()
			if err != nil {
				return -1
			}
			return float64(n)
		}))
	}
	return m
}

func (m *Metrics) taskStarted() {
	if m != nil {
		m.started.Inc()
	}
}

func (m *Metrics) taskEnded(completed bool) {
	switch {
	case m == nil:
	case completed:
		m.completed.Inc()
	default:
		m.failed.Inc()
	}
}

func (m *Metrics) adapterCall(d time.Duration) {
	if m != nil {
		m.adapterLatency.Observe(d.Seconds())
	}
}

func (m *Metrics) taskGivenBack() {
	if m != nil {
		m.givenBack.Inc()
	}
}

func (m *Metrics) adapterReady(ready bool) {
	if m == nil {
		return
	}
	if ready {
		m.adapterUp.Set(1)
	} else {
		m.adapterUp.Set(0)
	}
}

func (m *Metrics) heartbeatFailed() {
	if m != nil {
		m.heartbeatFailures.Inc()
	}
}

// StatusServer is the runtime's optional local status port: GET /metrics
// (Prometheus) and GET /healthz. It only exists when asked for, so a runtime
// opens no listening socket by default.
type StatusServer struct {
	srv *http.Server
	ln  net.Listener
}

// ServeStatus listens on addr and serves the status port. health returns
// what /healthz answers (JSON).
func ServeStatus(addr string, gatherer prometheus.Gatherer, health func() []byte) (*StatusServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(health())
	})
	s := &StatusServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	return s, nil
}

// Addr is the address the status port listens on.
func (s *StatusServer) Addr() string { return s.ln.Addr().String() }

// Close stops the status port.
func (s *StatusServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}
