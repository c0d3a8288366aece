// Package delegation is the delegation service: agents' routing rules, and
// the delegated task runs they cause. When a task for agent A matches one
// of A's rules, the task queue does not queue it for A's runtime but for
// this service, which takes it (a platform-side claim, with a lease it
// renews), makes a real A2A call to the target agent B's endpoint with a token
// the platform signs for A (so B's endpoint authenticates, scopes and rate
// limits it as any caller), and follows B's task on the bus until it ends:
// A's run then ends with B's answer or B's failure. Loops and chains deeper
// than the limit are refused; canceling a delegating run cancels its
// delegate, down the chain. Tasks may also go to a partner platform that
// speaks seed 003's routes, which reports back through signed callbacks.
//
// The state of every delegation is on the bus: the run records (the parent
// holds its delegate's id once linked) and the A2A endpoint's idempotent send,
// so after a restart the service finds the runs it was holding and follows
// them again. docs/delegation.md tells the whole story.
package delegation

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/a2atoken"
	"github.com/a2amesh/a2amesh/internal/runfollow"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/internal/homes"
	"github.com/a2amesh/a2amesh/services/internal/runtimedir"
)

// DefaultMaxDepth is the longest delegation chain: how many agents may
// delegate one after another.
const DefaultMaxDepth = 3

// Config configures the service. Zero values take the documented defaults.
type Config struct {
	Conn   *bus.Conn
	Logger zerolog.Logger
	// Region is the region this service runs in ("" on a server in no
	// cluster): a delegation is followed in the home regions of its two
	// agents' runs, which it tells from the agents bucket's copy there.
	Region string
	// GatewayURL is where this service reaches the platform's A2A endpoints:
	// a delegation is a call to <GatewayURL>/a2a/<target agent>. Required.
	GatewayURL string
	// MaxDepth bounds a delegation chain: a run may be delegated only while
	// its chain (the agents that delegated, the run's own agent included)
	// holds at most this many agents. Default 3.
	MaxDepth int
	// Lease is the task queue's lease; held runs are renewed at a third of
	// it. Default 60s.
	Lease time.Duration
	// AllowPrivate lets partner URLs reach loopback, private and link-local
	// addresses (the platform's --allow-private-webhooks).
	AllowPrivate bool
	// CallTimeout bounds one call to an A2A endpoint or a partner. Default 30s.
	CallTimeout time.Duration
	// RetryBackoff is the first wait before a failed call to a delegate's
	// endpoint is retried (doubling, five tries in all). Default 500ms.
	RetryBackoff time.Duration
	// CallbackTolerance is how far a partner callback's timestamp may be
	// from now. Default 5 minutes.
	CallbackTolerance time.Duration
}

func (c *Config) defaults() {
	if c.MaxDepth == 0 {
		c.MaxDepth = DefaultMaxDepth
	}
	if c.Lease == 0 {
		c.Lease = mesh.DefaultLease
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 30 * time.Second
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = 500 * time.Millisecond
	}
	if c.CallbackTolerance == 0 {
		c.CallbackTolerance = 5 * time.Minute
	}
	c.GatewayURL = strings.TrimRight(c.GatewayURL, "/")
}

// Service is the delegation service.
type Service struct {
	cfg Config
	log zerolog.Logger
	js  jetstream.JetStream
	// runs follows delegating runs and their delegates, each in the event
	// stream of its agent's home region.
	runs   *runfollow.Regions
	homes  *homes.Directory
	client *meshapi.Client
	signer *a2atoken.Signer
	store  *store
	rules  *ruleBook
	svc    *bus.Service
	http   *http.Client

	runtimes *runtimedir.Directory

	mu      sync.Mutex
	follows map[string]*follow    // by parent run id
	turns   map[string]*turnWatch // runs with tasks delegated from inside their work

	// renewer keeps the leases of the runs this service holds (queue.go).
	renewer *bus.Periodic

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a service; Start runs it.
func New(cfg Config) *Service {
	cfg.defaults()
	s := &Service{cfg: cfg, log: cfg.Logger, follows: map[string]*follow{}, turns: map[string]*turnWatch{}}
	// At a third of the lease, so two renewals may be lost in a row.
	s.renewer = &bus.Periodic{Interval: max(cfg.Lease/3, 50*time.Millisecond), Run: s.renew}
	return s
}

// Start loads the rules, answers on the bus, takes delegated runs from its
// queue, and resumes following the delegations in progress.
func (s *Service) Start(ctx context.Context) error {
	if s.cfg.GatewayURL == "" {
		return fmt.Errorf("delegation: the gateway URL is required (delegations are A2A calls to it)")
	}
	s.js = s.cfg.Conn.JS
	s.client = meshapi.NewClient(s.cfg.Conn.NC)
	s.http = newHTTPClient(s.cfg.AllowPrivate, s.cfg.CallTimeout)
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	var err error
	if s.signer, err = a2atoken.Load(ctx, s.js); err != nil {
		return err
	}
	if s.homes, err = homes.Open(ctx, s.js, s.cfg.Region, s.log); err != nil {
		return err
	}
	s.runs = runfollow.NewRegions(s.cfg.Conn, runfollow.Config{}, s.homes.Of)
	if s.store, err = openStore(ctx, s.js); err != nil {
		return err
	}
	if s.rules, err = startRuleBook(ctx, s.js, s.log); err != nil {
		return err
	}
	if s.runtimes, err = runtimedir.Open(ctx, s.js, runtimedir.Options{Logger: s.log}); err != nil {
		return err
	}
	if err := s.serve(); err != nil {
		return err
	}
	s.startQueue()
	s.renewer.Start(s.ctx)
	s.wg.Add(2)
	go s.resume()
	go s.resumeTurns()
	return nil
}

func (s *Service) serve() error {
	var err error
	s.svc, err = bus.Serve(s.cfg.Conn.NC, bus.ServiceSpec{
		Name: bus.ServiceDelegation, Description: "routing rules and delegated task runs", Logger: s.log,
		Endpoints: []bus.Endpoint{
			meshapi.OpRulesCreate.Handle(s.handleRuleCreate),
			meshapi.OpRulesList.Handle(s.handleRuleList),
			meshapi.OpRulesDelete.Handle(s.handleRuleDelete),
			meshapi.OpRulesMatch.Handle(s.handleMatch),
			meshapi.OpDelegationTrace.Handle(s.handleTrace),
			meshapi.OpPartnersCreate.Handle(s.handlePartnerCreate),
			meshapi.OpPartnersList.Handle(s.handlePartnerList),
			meshapi.OpPartnersDelete.Handle(s.handlePartnerDelete),
			meshapi.OpPartnersCallback.Handle(s.handlePartnerCallback),
			meshapi.OpRuntimeDelegateAgents.Handle(s.handleDelegateAgents),
			meshapi.OpRuntimeDelegateSend.Handle(s.handleDelegateSend),
			meshapi.OpRuntimeDelegateGet.Handle(s.handleDelegateGet),
			meshapi.OpRuntimeDelegateArtifact.Handle(s.handleDelegateArtifact),
			meshapi.OpRuntimeDelegateCancel.Handle(s.handleDelegateCancel),
		},
	})
	return err
}

// Stop stops answering, stops taking runs and following delegations (the
// runs stay as they are: a restarted service follows them again), and
// waits up to grace for requests in flight.
func (s *Service) Stop(grace time.Duration) {
	if s.svc != nil {
		_ = s.svc.Stop(grace)
	}
	if s.cancel != nil {
		s.cancel()
	}
	done := make(chan struct{})
	go func() { s.renewer.Stop(); s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
	}
	if s.rules != nil {
		s.rules.stop()
	}
	if s.runtimes != nil {
		s.runtimes.Close()
	}
	if s.homes != nil {
		s.homes.Stop()
	}
}
