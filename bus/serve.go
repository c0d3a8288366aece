package bus

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// The skeleton every platform service shares: Serve answers a service's
// operations on the bus, Periodic runs its maintenance jobs.

// serviceVersion is the version every service reports to NATS service
// discovery ($SRV.INFO): the services' contract is versioned by the
// platform's release, not per service.
const serviceVersion = "1.0.0"

// ServiceSpec is what one service answers on the bus.
type ServiceSpec struct {
	// Name is the service's name, one of the Service constants: its
	// operations are on ServiceSubject(Name, op).
	Name        string
	Description string
	// Endpoints answers the service's operations (meshapi's table of
	// operations, Op.Handle), each on its subject: a runtime operation's
	// handler runs only for requests on a runtime subject, and learns its
	// sender with RuntimeOf.
	Endpoints []Endpoint
	// Region is the region this copy of the service serves. With Route,
	// a request that belongs to another region is handed to that region's
	// copies (see Route), and this copy also answers what other regions
	// hand to Region.
	Region string
	// Route says where each request belongs; nil: every request is
	// answered here.
	Route RouteFunc
	// Concurrency bounds requests handled at once. Default 256.
	Concurrency int
	// Timeout bounds one handler. Default 60s.
	Timeout time.Duration
	Logger  zerolog.Logger
}

// Serve registers the service of spec on nc and answers its operations,
// each request on its own goroutine, until Stop. Copies of a service on
// other connections share the requests (NATS service queue groups).
func Serve(nc *nats.Conn, spec ServiceSpec) (*Service, error) {
	svc, err := newService(nc, serviceConfig{
		Name: spec.Name, Version: serviceVersion, Description: spec.Description,
		Concurrency: spec.Concurrency, Timeout: spec.Timeout, Logger: spec.Logger,
	})
	if err != nil {
		return nil, err
	}
	add := func(op, endpoint, subject string, h HandlerFunc, bounded bool) error {
		if spec.Route == nil || spec.Region == "" {
			return svc.handle(endpoint, subject, h, bounded)
		}
		if err := svc.handle(endpoint, subject, svc.routed(spec.Region, endpoint, op, spec.Route, h), bounded); err != nil {
			return err
		}
		return svc.handleFrom("region_"+endpoint, RegionSubject(spec.Region, spec.Name, endpoint), h, bounded, true)
	}
	for _, ep := range spec.Endpoints {
		endpoint, subject, h := ep.Name, ServiceSubject(spec.Name, ep.Name), ep.Handler
		if ep.Runtime {
			endpoint, subject, h = "runtime_"+ep.Name, RuntimeSubjectPattern(ep.Name), runtimeOnly(h)
		}
		// An operation that may wait long is not counted against
		// Concurrency, which bounds the work in flight, so thousands of
		// idle runtimes waiting for work never hold up the other requests;
		// its handler bounds how many may wait.
		if err := add(ep.Name, endpoint, subject, h, !ep.Waits); err != nil {
			_ = svc.Stop(0)
			return nil, err
		}
	}
	return svc, nil
}

// Periodic is a service's maintenance job (a sweep, the reaper, a repair):
// Run is called every Interval on one goroutine of its own, from Start
// until the context given to Start ends or Stop is called. Run gets that
// context, which Stop cancels, so a tick's work ends with the service
// instead of outliving it; a tick never overlaps the next.
type Periodic struct {
	// Interval is how often the job runs; a tick that comes while a run is
	// still going is dropped.
	Interval time.Duration
	// AtStart runs the job once as soon as it starts, before the first
	// interval has passed.
	AtStart bool
	// Run does one round of the job.
	Run func(ctx context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs the job until ctx ends or Stop. A job runs once at a time:
// starting a started job does nothing.
func (p *Periodic) Start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		return
	}
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go p.loop(ctx, p.done)
}

func (p *Periodic) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	if p.AtStart {
		p.Run(ctx)
	}
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.Run(ctx)
		}
	}
}

// Stop cancels the job's context and waits for a run in progress to
// return. Stopping a job that never started does nothing.
func (p *Periodic) Stop() {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	<-done
}
