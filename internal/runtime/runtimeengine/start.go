package runtimeengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/runtime/toolserver"
)

// Options are what Start assembles a runtime from: the paired profile, how
// to reach the platform and the local adapter, and the hooks through which
// the caller records what the runtime does in the profile.
type Options struct {
	// Profile is the paired runtime: its agent and runtime ids, credential,
	// NATS addresses, sealing key and platform.
	Profile profile.Profile
	// Mode is the transport (ModeAuto, ModeNATS or ModeHTTP). Defaults to
	// ModeAuto.
	Mode string
	// NATSURL overrides the NATS addresses advertised at pairing.
	NATSURL string
	// API is the platform's REST API with the runtime's credential.
	API *restclient.Client
	// Adapter is the local adapter's client.
	Adapter *adapterclient.Client
	// Supervise, when set, is the a2a-adapter Start runs on the adapter's
	// endpoint, restarts when it exits, and stops on Close (its Client and
	// Logger are Adapter and Logger).
	Supervise *AdapterProcessConfig
	// LedgerDir is where the ledger is written; empty writes none.
	LedgerDir string
	// StatusListen, when set, is the local address serving /metrics and
	// /healthz.
	StatusListen string

	// Concurrency, TaskTimeout, AdapterWait, DrainGrace, HeartbeatInterval
	// and RenewInterval are RuntimeConfig's; zero takes their defaults. A
	// negative AdapterWait waits for the adapter for ever; the others may
	// not be negative.
	Concurrency       int
	TaskTimeout       time.Duration
	AdapterWait       time.Duration
	DrainGrace        time.Duration
	HeartbeatInterval time.Duration
	RenewInterval     time.Duration

	// NATSMoved is called when the platform gave the runtime new NATS
	// addresses (see FollowHome), to store them in the profile.
	NATSMoved func(profile.NATS)
	// RecordConnection is called with where the runtime is connected: at
	// once, and again at a heartbeat after the connection moved (to another
	// server or region). An error leaves it to be recorded again.
	RecordConnection func(profile.Connection) error
	// OnHeartbeat is called after each heartbeat the platform took.
	OnHeartbeat func(at time.Time)
	// Stopped is called on Close, before the transport closes, once
	// RecordConnection was (to record that the runtime stopped).
	Stopped func()

	Logger zerolog.Logger
}

// OptionError is Validate's refusal of one field of Options. Field is the
// Go field's name; a program that fills the field from a flag names the
// flag instead (see OptionErrors).
type OptionError struct {
	Field   string
	Problem string
}

func (e *OptionError) Error() string { return e.Field + " " + e.Problem }

// OptionErrors returns the fields Validate refused in err (Validate's or
// Start's error), in order; none when err is another error.
func OptionErrors(err error) []*OptionError {
	var out []*OptionError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *OptionError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// Validate says which fields of o are wrong, if any: each an *OptionError.
func (o Options) Validate() error {
	var errs []error
	refuse := func(field, format string, args ...any) {
		errs = append(errs, &OptionError{Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	if o.Profile.AgentID == "" {
		refuse("Profile.AgentID", "is empty")
	}
	if o.Profile.RuntimeID == "" {
		refuse("Profile.RuntimeID", "is empty")
	}
	switch o.Mode {
	case "", ModeAuto, ModeNATS, ModeHTTP:
	default:
		refuse("Mode", "%q is none of %s, %s and %s", o.Mode, ModeAuto, ModeNATS, ModeHTTP)
	}
	if o.API == nil {
		refuse("API", "is nil")
	}
	if o.Adapter == nil {
		refuse("Adapter", "is nil")
	}
	if s := o.Supervise; s != nil {
		if s.Binary == "" {
			refuse("Supervise.Binary", "is empty")
		}
		if s.Provider == "" {
			refuse("Supervise.Provider", "is empty")
		}
		if s.Listen == "" {
			refuse("Supervise.Listen", "is empty")
		}
	}
	if o.Concurrency < 0 {
		refuse("Concurrency", "%d is negative", o.Concurrency)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"TaskTimeout", o.TaskTimeout}, {"DrainGrace", o.DrainGrace}, {"HeartbeatInterval", o.HeartbeatInterval}, {"RenewInterval", o.RenewInterval}} {
		if d.v < 0 {
			refuse(d.name, "%s is negative", d.v)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("runtime options: %w", err)
	}
	return nil
}

// DialError is Start's error when the platform could not be reached or
// refused the runtime's credential (see Dial).
type DialError struct{ Err error }

func (e *DialError) Error() string { return e.Err.Error() }
func (e *DialError) Unwrap() error { return e.Err }

// Runtime is a runtime Start assembled: connected, with its tool server,
// ledger and status port, ready to Run.
type Runtime struct {
	engine    *Engine
	transport Transport
	ledger    *ledger.Ledger
	tools     *toolserver.Server
	status    *StatusServer
	log       zerolog.Logger
	// closers run last first on Close.
	closers []func()
	closed  atomic.Bool
}

// Start assembles the runtime a2a-runtime start runs, in this order: the
// supervised adapter (if any), the ledger, the connection to the platform
// (following the agent's home region), a check of the local adapter, the
// status port (before the engine, which its health reads), the connection
// recorded, the tool server, and the engine. On an error what was started
// is stopped again. ctx bounds the dial and the supervised adapter's life.
func Start(ctx context.Context, o Options) (rt *Runtime, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p, log := o.Profile, o.Logger
	rt = &Runtime{log: log}
	defer func() {
		if err != nil {
			rt.Close()
			rt = nil
		}
	}()
	if s := o.Supervise; s != nil {
		cfg := *s
		cfg.Client, cfg.Logger = o.Adapter, log
		proc, err := StartAdapter(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("--adapter %s: %w", cfg.Provider, err)
		}
		// First, so it stops last: after the running tasks drained.
		rt.closers = append(rt.closers, proc.Stop)
	}
	if o.LedgerDir != "" {
		led, err := ledger.New(o.LedgerDir, p.AgentID, p.RuntimeID, ledger.WithSecrets(p.RuntimeToken))
		if err != nil {
			return nil, err
		}
		rt.ledger = led
		rt.closers = append(rt.closers, func() { _ = led.Close() })
	}

	dial := DialConfig{Profile: p, Mode: o.Mode, NATSURL: o.NATSURL, API: o.API, Logger: log}
	tr, hello, err := Dial(ctx, dial)
	if err != nil {
		return nil, &DialError{Err: err}
	}
	// Where to connect may have changed since pairing (the agent's home
	// region moved): the profile follows.
	tr, hello, fresh := FollowHome(ctx, dial, tr, hello)
	if fresh != nil {
		p.NATS = *fresh
		if o.NATSMoved != nil {
			o.NATSMoved(*fresh)
		}
	}
	rt.transport = tr
	rt.closers = append(rt.closers, tr.Close)
	hctx, hcancel := context.WithTimeout(ctx, 2*time.Second)
	if h, err := o.Adapter.Health(hctx); err != nil {
		log.Warn().Err(err).Str("endpoint", o.Adapter.Endpoint()).Msg("local adapter is not answering yet; no task runs are claimed until it does")
	} else {
		log.Info().Str("provider", h.Provider).Str("endpoint", o.Adapter.Endpoint()).Msg("local adapter healthy")
	}
	hcancel()

	var metrics *Metrics
	// The status port serves before the engine exists.
	var running atomic.Pointer[Engine]
	if o.StatusListen != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		metrics = NewMetrics(reg, rt.ledger)
		status, err := ServeStatus(o.StatusListen, reg, func() []byte {
			health, _ := json.Marshal(map[string]any{"ok": true, "agent_id": p.AgentID, "runtime_id": p.RuntimeID,
				"transport": tr.Name(), "adapter_ready": running.Load() == nil || running.Load().AdapterReady()})
			return health
		})
		if err != nil {
			return nil, fmt.Errorf("status port: %w", err)
		}
		rt.status = status
		rt.closers = append(rt.closers, func() { _ = status.Close() })
		log.Info().Str("status", "http://"+status.Addr()).Msg("status port: /metrics and /healthz")
	}
	recordConnection := connectionRecorder(tr, o.RecordConnection)
	recordConnection()
	if o.Stopped != nil {
		rt.closers = append(rt.closers, o.Stopped)
	}
	// Hosts get the delegation tools of their run, over either transport.
	tools, err := toolserver.Start(toolserver.Config{Platform: Delegation(tr)})
	if err != nil {
		return nil, fmt.Errorf("tool server: %w", err)
	}
	rt.tools = tools
	rt.closers = append(rt.closers, func() { _ = tools.Close() })
	if p.SealingKey == "" {
		log.Warn().Msg("this runtime has no sealing key (it was paired by an older a2a-runtime): tasks with environment variables are refused for its agent until it is paired again")
	}
	rt.engine = NewRuntime(RuntimeConfig{
		Tools:      tools,
		SealingKey: p.SealingKey,
		AgentID:    p.AgentID, RuntimeID: p.RuntimeID, Transport: tr, Hello: hello, API: o.API, Adapter: o.Adapter,
		Ledger: rt.ledger, Platform: p.Platform, Concurrency: o.Concurrency, TaskTimeout: o.TaskTimeout, DrainGrace: o.DrainGrace,
		AdapterWait:       o.AdapterWait,
		HeartbeatInterval: o.HeartbeatInterval, RenewInterval: o.RenewInterval,
		OnHeartbeat: func(at time.Time) {
			if o.OnHeartbeat != nil {
				o.OnHeartbeat(at)
			}
			recordConnection()
		},
		Metrics: metrics,
		Logger:  log,
	})
	running.Store(rt.engine)
	return rt, nil
}

// connectionRecorder gives record the transport's connection when it
// differs from the one last recorded (nothing when record is nil).
func connectionRecorder(tr Transport, record func(profile.Connection) error) func() {
	var recorded profile.Connection
	return func() {
		if record == nil {
			return
		}
		c := tr.Connection()
		if c.Transport == recorded.Transport && c.Server == recorded.Server && c.Region == recorded.Region && !recorded.At.IsZero() {
			return
		}
		if err := record(c); err != nil {
			return
		}
		recorded = c
	}
}

// Run works on the agent's task runs until ctx ends (then lets the running
// ones finish, up to the drain grace) or the platform refuses the runtime.
func (r *Runtime) Run(ctx context.Context) error {
	r.log.Info().Str("transport", r.transport.Name()).Int("concurrency", r.engine.cfg.Concurrency).Msg("runtime started")
	if err := r.engine.Run(ctx); err != nil {
		return err
	}
	r.log.Info().Msg("runtime stopped")
	return nil
}

// StopNow stops Run at once, without letting running tasks finish.
func (r *Runtime) StopNow() { r.engine.StopNow() }

// Transport is the runtime's connection to the platform.
func (r *Runtime) Transport() Transport { return r.transport }

// Ledger is the runtime's ledger; nil without Options.LedgerDir.
func (r *Runtime) Ledger() *ledger.Ledger { return r.ledger }

// Tools is the tool server serving each run's delegation tools.
func (r *Runtime) Tools() *toolserver.Server { return r.tools }

// StatusAddr is the address the status port listens on; empty without
// Options.StatusListen.
func (r *Runtime) StatusAddr() string {
	if r.status == nil {
		return ""
	}
	return r.status.Addr()
}

// Engine is the runtime's engine.
func (r *Runtime) Engine() *Engine { return r.engine }

// Close stops what Start started, last first: the tool server, the stop
// recorded, the status port, the transport, the ledger, the supervised
// adapter. Call it after Run returned.
func (r *Runtime) Close() {
	if r == nil || !r.closed.CompareAndSwap(false, true) {
		return
	}
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}
