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
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/internal/homes"
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
	// ReapInterval is how often expired leases and deadlines are looked for.
	// Default: a tenth of Lease, at most 1s.
	ReapInterval time.Duration
	// OfferHold is how long a copy holds back a run it offered, for the
	// claim to arrive, before offering it again. Default 10s.
	OfferHold time.Duration
	// MaxPullWait caps a long-poll pull. Default 55s.
	MaxPullWait time.Duration
	// Metrics receives the service's metrics; nil records none.
	Metrics prometheus.Registerer
	// Region is the region this task queue serves: it keeps the runs of
	// the agents homed there and hands requests about others to their
	// home region's task queue. Default bus.DefaultRegion.
	Region string
}

func (c *Config) defaults() {
	if c.Region == "" {
		c.Region = bus.DefaultRegion
	}
	if c.Lease == 0 {
		c.Lease = mesh.DefaultLease
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = mesh.DefaultHeartbeatTimeout
	}
	if c.ReapInterval == 0 {
		c.ReapInterval = min(c.Lease/10, time.Second)
	}
	if c.OfferHold == 0 {
		c.OfferHold = 10 * time.Second
	}
	if c.MaxPullWait == 0 {
		c.MaxPullWait = meshapi.MaxWait
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

	index    *index
	runView  *bus.Mirror[runHead, *summary]
	agents   *bus.Mirror[mesh.Agent, *agentView]
	runtimes *runtimedir.Directory

	events *bus.Publisher
	// outbox publishes runs' events in order, off the runs' locks.
	outbox *outbox
	svc    *bus.Service
	// client asks other services (the delegation service's routing rules).
	client *meshapi.Client
	hbSub  *nats.Subscription
	// handedSub takes the heartbeats other regions' task queues hand over.
	handedSub *nats.Subscription
	// homes says which region keeps each agent's runs.
	homes  *homes.Directory
	locks  stripedLocks
	recent *recentRuns

	// Dispatch (dispatch.go): the runs this copy offered, the runs whose
	// pending event is known stored, the queues to look at again, and
	// stopped, closed by Stop to end the offers that wait.
	offered    offered
	announced  announced
	rechecksMu sync.Mutex
	rechecks   map[string]bool
	stopped    chan struct{}
	stopOnce   sync.Once
	waiters    waiters
	// cancelWaiters counts, per runtime, its requests waiting for cancels.
	cancelWaiters waiters

	// claimLatency observes a run's first claim time minus its creation
	// time: its time in the queue (nil: no metrics).
	claimLatency prometheus.Observer
	// runDuration observes a run's end time minus its creation time, by
	// the status it ended with (nil: no metrics).
	runDuration *prometheus.HistogramVec
	// offersWaiting counts the offer requests waiting (nil: no metrics).
	offersWaiting *prometheus.GaugeVec
	// usageTokens counts the tokens hosts reported, by kind (input,
	// output, cached); usageCost their cost (nil: no metrics).
	usageTokens *prometheus.CounterVec
	usageCost   prometheus.Counter

	startedAt time.Time
	// The reaper (reaper.go) is the maintenance job.
	reaper *bus.Periodic
}

// agentView is what the task queue keeps of an agent: its instructions,
// which claims carry, and their digest, which REST pulls carry, computed
// once when the agent changes rather than on every pull.
type agentView struct {
	Instructions       string
	InstructionsDigest string
	// Budget is the agent's budget (usage.go).
	Budget *mesh.Budget
	// ApprovalPolicy is the agent's approval policy (approval.go).
	ApprovalPolicy *mesh.ApprovalPolicy
}

// agentSync bounds how long an answer waits for the view of the agents to
// catch up with their bucket (agentAsOf); an answer to a claim waits for it.
const agentSync = time.Second

// agentAsOf is what the task queue keeps of an agent, with every edit the
// agents' bucket had stored at t (an instant of this process's clock): the
// view, once it has caught up with them. When the view cannot catch up
// within agentSync (the bucket's server out of reach), it is the view as
// it is. The mirror logs a question it could not ask, once for all the
// answers waiting on it; each such answer is logged at debug level only,
// so an outage does not log once per claim.
func (s *Service) agentAsOf(ctx context.Context, agentID string, t time.Time) (*agentView, bool) {
	sctx, cancel := context.WithTimeout(ctx, agentSync)
	err := s.agents.SyncAfter(sctx, t)
	cancel()
	if err != nil && ctx.Err() == nil {
		s.cfg.Logger.Debug().Ctx(ctx).Err(err).Str("agent_id", agentID).Msg("the view of the agents could not catch up with their bucket: answering with it as it is")
	}
	return s.agents.Get(agentID)
}

// currentAgent is the agent with every edit answered before this call.
func (s *Service) currentAgent(ctx context.Context, agentID string) (*agentView, bool) {
	return s.agentAsOf(ctx, agentID, time.Now())
}

// agentOfRuns is the agent of runs just claimed (ids), for the claim's
// answer: with every edit answered before the runs were created, so an
// edit answered before a task was created (new instructions) reaches the
// task. The index first held each run after its creation, so the view need
// only hold what the bucket had then, which an earlier question often shows.
func (s *Service) agentOfRuns(ctx context.Context, agentID string, ids []string) (*agentView, bool) {
	t, ok := s.index.firstSeen(ids)
	if !ok {
		t = time.Now()
	}
	return s.agentAsOf(ctx, agentID, t)
}

// runIDs names runs.
func runIDs(runs []mesh.TaskRun) []string {
	ids := make([]string, len(runs))
	for i := range runs {
		ids[i] = runs[i].ID
	}
	return ids
}

// New returns a service; Start runs it.
func New(cfg Config) *Service {
	cfg.defaults()
	s := &Service{cfg: cfg, recent: newRecentRuns(), stopped: make(chan struct{}), cancelWaiters: waiters{about: "for cancels"}}
	s.reaper = &bus.Periodic{Interval: cfg.ReapInterval, Run: s.reap}
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
	s.outbox = newOutbox(s.publishEvent, s.cfg.Logger)
	s.registerMetrics()
	if err := s.serve(); err != nil {
		return err
	}
	// ctx bounds the start only: the jobs live until Stop.
	life := context.WithoutCancel(ctx)
	s.reaper.Start(life)
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
	s.index = newIndex()
	s.runView, err = bus.StartMirror(ctx, s.js, bus.BucketRuns, bus.MirrorConfig[runHead, *summary]{
		Project:  func(_ string, r *runHead, rev uint64) (*summary, bool) { return summarize(r, rev), true },
		OnChange: s.onRunChange,
		Logger:   s.cfg.Logger,
	})
	if err != nil {
		return err
	}
	// The view of the agents feeds the home-region directory: one watch
	// of the agents bucket, not two.
	if s.homes, err = homes.Fed(ctx, s.js, s.cfg.Region, s.cfg.Logger); err != nil {
		return err
	}
	s.agents, err = bus.StartMirror(ctx, s.js, bus.BucketAgents, bus.MirrorConfig[mesh.Agent, *agentView]{
		Project: func(id string, a *mesh.Agent, _ uint64) (*agentView, bool) {
			s.homes.Observe(id, &a.HomeRegion)
			return &agentView{Instructions: a.Instructions, InstructionsDigest: meshapi.InstructionsDigest(a.Instructions), Budget: a.Budget, ApprovalPolicy: a.ApprovalPolicy}, true
		},
		OnChange: func(id string, v **agentView) {
			if v == nil {
				s.homes.Observe(id, nil)
			}
		},
		Logger: s.cfg.Logger,
	})
	if err != nil {
		return err
	}
	if s.runtimes, err = runtimedir.Open(ctx, s.js, runtimedir.Options{Presence: true, Logger: s.cfg.Logger}); err != nil {
		return err
	}
	for _, m := range []interface{ WaitReady(context.Context) error }{s.runView, s.agents} {
		if err := m.WaitReady(ctx); err != nil {
			return fmt.Errorf("taskqueue: load: %w", err)
		}
	}
	return nil
}

func (s *Service) serve() error {
	var err error
	s.svc, err = bus.Serve(s.cfg.Conn.NC, bus.ServiceSpec{
		Name: bus.ServiceTaskQueue, Description: "task runs", Logger: s.cfg.Logger,
		Region: s.cfg.Region, Route: s.homes.Routes(s.routeRequest),
		Timeout: s.cfg.MaxPullWait + meshapi.MaxHandling - meshapi.MaxWait,
		Endpoints: []bus.Endpoint{
			meshapi.OpUsageReport.Handle(s.handleUsage),
			meshapi.OpDelegatedOffer.Handle(s.handleDelegateOffer),
			meshapi.OpDelegatedClaim.Handle(s.handleDelegateClaim),
			meshapi.OpDelegatedLink.Handle(s.handleDelegateLink),
			meshapi.OpDelegatedRenew.Handle(s.handleDelegateRenew),
			meshapi.OpDelegatedProgress.Handle(s.handleDelegateProgress),
			meshapi.OpDelegatedEnd.Handle(s.handleDelegateEnd),
			meshapi.OpTaskRunsCreate.Handle(s.handleCreate),
			meshapi.OpTaskRunsGet.Handle(s.handleGet),
			meshapi.OpTaskRunsList.Handle(s.handleList),
			meshapi.OpTaskRunsCancel.Handle(s.handleCancel),
			meshapi.OpTaskRunsContinue.Handle(s.handleContinue),
			meshapi.OpTaskRunsAttachArtifact.Handle(s.handleAttachArtifact),
			meshapi.OpConversationsCreate.Handle(s.handleConversationCreate),
			meshapi.OpConversationsGet.Handle(s.handleConversationGet),
			meshapi.OpRuntimeHello.Handle(s.handleHello),
			meshapi.OpRuntimePull.Handle(s.handlePull),
			meshapi.OpRuntimeOffer.Handle(s.handleOffer),
			meshapi.OpRuntimeClaim.Handle(s.handleClaim),
			meshapi.OpRuntimeClaimMany.Handle(s.handleClaimMany),
			meshapi.OpRuntimeRelease.Handle(s.handleRelease),
			meshapi.OpRuntimeRenew.Handle(s.handleRenew),
			meshapi.OpRuntimeCanceled.Handle(s.handleCanceled),
			meshapi.OpRuntimeProgress.Handle(s.handleProgress),
			meshapi.OpRuntimeComplete.Handle(s.handleComplete),
			meshapi.OpRuntimeFail.Handle(s.handleFail),
			meshapi.OpRuntimeApproval.Handle(s.handleApproval),
			meshapi.OpTaskRunsDecideApproval.Handle(s.handleDecideApproval),
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
	s.handedSub, err = s.cfg.Conn.NC.QueueSubscribe(bus.RegionSubject(s.cfg.Region, bus.ServiceTaskQueue, leasesOp), "taskqueue-leases", s.onHeartbeat)
	if err != nil {
		return fmt.Errorf("taskqueue: heartbeat subscription: %w", err)
	}
	return nil
}

// Stop stops answering, waits up to grace for requests in flight, and stops
// the background loops.
func (s *Service) Stop(grace time.Duration) {
	for _, sub := range []*nats.Subscription{s.hbSub, s.handedSub} {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
	}
	// Offers that wait end at once, empty: their runtimes ask again, and
	// another copy answers.
	s.stopOnce.Do(func() { close(s.stopped) })
	if s.svc != nil {
		_ = s.svc.Stop(grace)
	}
	s.reaper.Stop()
	if s.outbox != nil {
		s.outbox.stop()
	}
	for _, m := range []interface{ Stop() error }{s.runView, s.agents} {
		if m != nil {
			_ = m.Stop()
		}
	}
	s.homes.Stop()
	if s.runtimes != nil {
		s.runtimes.Close()
	}
}
