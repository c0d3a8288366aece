package taskqueue

import (
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/prometheus/client_golang/prometheus"
)

// registerMetrics exposes the task runs by status (from the index, so every
// instance reports the whole platform), the claim latency histogram and the
// run duration histogram.
func (s *Service) registerMetrics() {
	reg := s.cfg.Metrics
	if reg == nil {
		return
	}
	metrics.RegisterOrExisting[prometheus.Collector](reg, &statusCollector{ix: s.index})
	s.claimLatency = metrics.RegisterOrExisting(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "a2amesh_claim_latency_seconds",
		Help:    "Time from a task run's creation to its first claim by a runtime: its time in the queue.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
	}))
	// From a tenth of a second to about four hours: runs are agents' work.
	s.runDuration = metrics.RegisterOrExisting(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "a2amesh_task_run_duration_seconds",
		Help:    "Time from a task run's creation to its end, by the status it ended with.",
		Buckets: prometheus.ExponentialBuckets(0.1, 2.5, 14),
	}, []string{"status"}))
	s.offersWaiting = metrics.RegisterOrExisting(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "a2amesh_offers_waiting",
		Help: "Requests for work waiting in this process for a pending run, by who asks: runtimes, or the delegation service.",
	}, []string{"waiter"}))
	s.usageTokens = metrics.RegisterOrExisting(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "a2amesh_usage_tokens_total",
		Help: "Tokens agent hosts reported spending in the runs this process recorded, by kind: input (cached included), output, cached.",
	}, []string{"kind"}))
	s.usageCost = metrics.RegisterOrExisting(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "a2amesh_usage_cost_usd_total",
		Help: "Cost in US dollars agent hosts reported for the runs this process recorded (hosts that report a cost only).",
	}))
}

// countUsage adds a host's report to the usage counters.
func (s *Service) countUsage(u *mesh.Usage) {
	if s.usageTokens == nil {
		return
	}
	s.usageTokens.WithLabelValues("input").Add(float64(u.InputTokens))
	s.usageTokens.WithLabelValues("output").Add(float64(u.OutputTokens))
	s.usageTokens.WithLabelValues("cached").Add(float64(u.CachedTokens))
	s.usageCost.Add(u.Cost())
}

var runsDesc = prometheus.NewDesc("a2amesh_task_runs", "Task runs known to the platform, by status.", []string{"status"}, nil)

// statusCollector reads the index's counts at scrape time.
type statusCollector struct{ ix *index }

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) { ch <- runsDesc }

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.ix.countByStatus()
	for _, st := range mesh.AllStatuses() {
		ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
}

// observeClaim records a run's time in the queue at its first claim; the
// claim of a retry would measure the earlier attempts' work, not waiting.
func (s *Service) observeClaim(run *mesh.TaskRun) {
	if s.claimLatency == nil || run.Attempt != 1 || run.ClaimedAt == nil {
		return
	}
	s.claimLatency.Observe(run.ClaimedAt.Sub(run.CreatedAt).Seconds())
}

// observeEnd records the duration of a run that has just ended.
func (s *Service) observeEnd(run *mesh.TaskRun) {
	if s.runDuration == nil {
		return
	}
	end := run.UpdatedAt
	if run.EndedAt != nil {
		end = *run.EndedAt
	}
	s.runDuration.WithLabelValues(string(run.Status)).Observe(end.Sub(run.CreatedAt).Seconds())
}
