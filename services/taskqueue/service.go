// Package taskqueue is the task-run service: it creates runs, queues them on
// JetStream for their agent's runtime, lets that runtime claim, renew, report
// progress on and end them, and guarantees that every run ends (the reaper).
//
// The run record in the runs bucket is the system of record; every transition
// is a compare-and-set on its revision (see transition.go). The work-queue
// message of a run only says "there is something to claim": a stale ack or a
// duplicate message can never change a run, because claims are checked
// against the record.
package taskqueue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/internal/runtimedir"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Config configures the service. Zero values take the documented defaults.
type Config struct {
	Conn   *bus.Conn
	Logger zerolog.Logger
	// Lease is how long a claim stays valid without renewal. Default 60s: a
	// runtime renews at a third of it, so two renewals may be lost in a row.
	Lease time.Duration
	// HeartbeatTimeout is told to runtimes in hello. Default 120s (seed 001 §4.2).
	HeartbeatTimeout time.Duration
	// AckWait is how long a fetched queue message may stay unacknowledged before
	// JetStream offers it again. Default 30s.
	AckWait time.Duration
	// ReapInterval is how often expired leases and deadlines are looked for.
	// Default: a tenth of Lease, at most 1s.
	ReapInterval time.Duration
	// RepairInterval is how often every pending run is checked for a lost
	// queue message. Default 30s.
	RepairInterval time.Duration
	// MaxPullWait caps a long-poll pull. Default 55s.
	MaxPullWait time.Duration
	// Metrics receives the service's metrics; nil records none.
	Metrics prometheus.Registerer
}

func (c *Config) defaults() {
	if c.Lease == 0 {
		c.Lease = mesh.DefaultLease
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = mesh.DefaultHeartbeatTimeout
	}
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.ReapInterval == 0 {
		c.ReapInterval = min(c.Lease/10, time.Second)
	}
	if c.RepairInterval == 0 {
		c.RepairInterval = 30 * time.Second
	}
	if c.MaxPullWait == 0 {
		c.MaxPullWait = 55 * time.Second
	}
}

// Service is the task-run service.
type Service struct {
	cfg   Config
	js    jetstream.JetStream
	runs  *bus.Records[mesh.TaskRun]
	convs *bus.Records[mesh.Conversation]
	idem  *bus.Records[idempotencyRecord]
	// agentStore confirms agents the agents view has not seen yet.
	agentStore *bus.Records[mesh.Agent]
	queue      jetstream.Stream

	index    *index
	runView  *bus.Mirror[mesh.TaskRun, *summary]
	agents   *bus.Mirror[mesh.Agent, *mesh.Agent]
	runtimes *runtimedir.Directory

	events *bus.Publisher
	// outbox publishes runs' events in order, off the runs' locks.
	outbox *outbox
	svc    *bus.Service
	// client asks other services (the delegation service's routing rules).
	client *meshapi.Client
	hbSub  *nats.Subscription
	locks  stripedLocks
	recent *recentRuns
	// unqueued are pending runs whose queue message could not be published.
	unqueued unqueued

	consumersMu sync.Mutex
	consumers   map[string]jetstream.Consumer
	// agentsLoaded is set once the agents view holds every agent: agents
	// that change after it are new or edited, not loaded.
	agentsLoaded atomic.Bool
	// bg counts the background work of agent changes (their consumers);
	// bgMu guards stopping, so none starts once Stop waits for it.
	bg       sync.WaitGroup
	bgMu     sync.Mutex
	stopping bool

	// claimLatency observes claim time minus creation time (nil: no metrics).
	claimLatency prometheus.Observer

	startedAt time.Time
	// The maintenance jobs: the reaper (reaper.go), the queue repair and
	// the retry of failed enqueues (repair.go).
	reaper, repairer, requeuer *bus.Periodic
}

// New returns a service; Start runs it.
func New(cfg Config) *Service {
	cfg.defaults()
	s := &Service{cfg: cfg, consumers: map[string]jetstream.Consumer{}, recent: newRecentRuns()}
	s.reaper = &bus.Periodic{Interval: cfg.ReapInterval, Run: s.reap}
	s.repairer = &bus.Periodic{Interval: cfg.RepairInterval, AtStart: true, Run: s.repair}
	s.requeuer = &bus.Periodic{Interval: retryInterval, Run: s.retryEnqueues}
	return s
}

// Start loads the run index, starts answering on the bus and starts the reaper
// and the queue repair.
func (s *Service) Start(ctx context.Context) error {
	s.startedAt = time.Now()
	s.js = s.cfg.Conn.JS
	s.client = meshapi.NewClient(s.cfg.Conn.NC)
	if err := s.open(ctx); err != nil {
		return err
	}
	s.events = bus.NewPublisher(s.js, bus.ServiceTaskQueue).OnPublished(metrics.EventsPublished(s.cfg.Metrics, bus.ServiceTaskQueue))
	s.outbox = newOutbox(s.events.Publish, s.cfg.Logger)
	s.registerMetrics()
	if err := s.serve(); err != nil {
		return err
	}
	// ctx bounds the start only: the jobs live until Stop.
	life := context.WithoutCancel(ctx)
	for _, job := range []*bus.Periodic{s.reaper, s.repairer, s.requeuer} {
		job.Start(life)
	}
	return nil
}

func (s *Service) open(ctx context.Context) error {
	var err error
	if s.runs, err = bus.OpenRecords[mesh.TaskRun](ctx, s.js, bus.BucketRuns); err != nil {
		return err
	}
	if s.convs, err = bus.OpenRecords[mesh.Conversation](ctx, s.js, bus.BucketConversations); err != nil {
		return err
	}
	if s.idem, err = bus.OpenRecords[idempotencyRecord](ctx, s.js, bus.BucketIdempotency); err != nil {
		return err
	}
	if s.agentStore, err = bus.OpenRecords[mesh.Agent](ctx, s.js, bus.BucketAgents); err != nil {
		return err
	}
	if s.queue, err = s.js.Stream(ctx, bus.QueueStream); err != nil {
		return fmt.Errorf("taskqueue: queue stream: %w", err)
	}
	s.index = newIndex()
	s.runView, err = bus.StartMirror(ctx, s.js, bus.BucketRuns, bus.MirrorConfig[mesh.TaskRun, *summary]{
		Project:  func(_ string, r *mesh.TaskRun, rev uint64) (*summary, bool) { return summarize(r, rev), true },
		OnChange: s.index.onChange,
		Logger:   s.cfg.Logger,
	})
	if err != nil {
		return err
	}
	s.agents, err = bus.StartMirror(ctx, s.js, bus.BucketAgents, bus.MirrorConfig[mesh.Agent, *mesh.Agent]{
		Project:  bus.Identity[mesh.Agent],
		OnChange: s.onAgentChange,
		Logger:   s.cfg.Logger,
	})
	if err != nil {
		return err
	}
	if s.runtimes, err = runtimedir.Open(ctx, s.js, runtimedir.Options{Logger: s.cfg.Logger}); err != nil {
		return err
	}
	for _, m := range []interface{ WaitReady(context.Context) error }{s.runView, s.agents} {
		if err := m.WaitReady(ctx); err != nil {
			return fmt.Errorf("taskqueue: load: %w", err)
		}
	}
	s.agentsLoaded.Store(true)
	return nil
}

// onAgentChange gives an agent created after start its queue consumer at
// once, rather than at its first run: the consumer then exists before any
// outage that leaves JetStream unable to create one.
func (s *Service) onAgentChange(id string, a **mesh.Agent) {
	if a == nil || !s.agentsLoaded.Load() {
		return
	}
	s.consumersMu.Lock()
	_, known := s.consumers[id]
	s.consumersMu.Unlock()
	if known {
		return
	}
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.stopping {
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := s.consumer(ctx, id); err != nil {
			// The first run of the agent creates it then.
			s.cfg.Logger.Warn().Err(err).Str("agent_id", id).Msg("queue consumer of a new agent not created")
		}
	}()
}

func (s *Service) serve() error {
	var err error
	s.svc, err = bus.Serve(s.cfg.Conn.NC, bus.ServiceSpec{
		Name: bus.ServiceTaskQueue, Description: "task runs", Logger: s.cfg.Logger,
		Timeout: s.cfg.MaxPullWait + 5*time.Second,
		Ops: map[string]bus.HandlerFunc{
			meshapi.OpTaskCreate:           s.handleCreate,
			meshapi.OpTaskGet:              s.handleGet,
			meshapi.OpTaskList:             s.handleList,
			meshapi.OpTaskCancel:           s.handleCancel,
			meshapi.OpTaskContinue:         s.handleContinue,
			meshapi.OpTaskAttachArtifact:   s.handleAttachArtifact,
			meshapi.OpConversationCreate:   s.handleConversationCreate,
			meshapi.OpConversationGet:      s.handleConversationGet,
			meshapi.OpTaskDelegateClaim:    s.handleDelegateClaim,
			meshapi.OpTaskDelegateLink:     s.handleDelegateLink,
			meshapi.OpTaskDelegateRenew:    s.handleDelegateRenew,
			meshapi.OpTaskDelegateProgress: s.handleDelegateProgress,
			meshapi.OpTaskDelegateEnd:      s.handleDelegateEnd,
		},
		RuntimeOps: map[string]bus.HandlerFunc{
			bus.RuntimeOpHello:    s.handleHello,
			bus.RuntimeOpPull:     s.handlePull,
			bus.RuntimeOpClaim:    s.handleClaim,
			bus.RuntimeOpRelease:  s.handleRelease,
			bus.RuntimeOpRenew:    s.handleRenew,
			bus.RuntimeOpProgress: s.handleProgress,
			bus.RuntimeOpComplete: s.handleComplete,
			bus.RuntimeOpFail:     s.handleFail,
		},
	})
	if err != nil {
		return err
	}
	// Heartbeats are answered by the registry; the task queue listens in its
	// own queue group only to renew the leases of the runtime's running runs.
	s.hbSub, err = s.cfg.Conn.NC.QueueSubscribe(bus.RuntimeSubjectPattern(bus.RuntimeOpHeartbeat), "taskqueue-leases", s.onHeartbeat)
	if err != nil {
		return fmt.Errorf("taskqueue: heartbeat subscription: %w", err)
	}
	return nil
}

// Stop stops answering, waits up to grace for requests in flight, and stops
// the background loops.
func (s *Service) Stop(grace time.Duration) {
	if s.hbSub != nil {
		_ = s.hbSub.Unsubscribe()
	}
	if s.svc != nil {
		_ = s.svc.Stop(grace)
	}
	for _, job := range []*bus.Periodic{s.reaper, s.repairer, s.requeuer} {
		job.Stop()
	}
	s.bgMu.Lock()
	s.stopping = true
	s.bgMu.Unlock()
	s.bg.Wait()
	if s.outbox != nil {
		s.outbox.stop()
	}
	for _, m := range []interface{ Stop() error }{s.runView, s.agents} {
		if m != nil {
			_ = m.Stop()
		}
	}
	if s.runtimes != nil {
		s.runtimes.Close()
	}
}
