package runtimeengine

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/internal/runtime/toolserver"
	"github.com/a2amesh/a2amesh/meshapi"
)

// RuntimeConfig is what the official runtime is built from. a2a-runtime
// start and the test fixtures both build their runtime with NewRuntime,
// so the tests exercise what ships.
type RuntimeConfig struct {
	AgentID   string
	RuntimeID string
	// Transport is the connection to the platform (Dial).
	Transport Transport
	// Hello is the platform's answer when the transport connected: the
	// agent's instructions then, and the timings intervals derive from.
	Hello *meshapi.HelloResponse
	// API is the platform's REST API with the runtime's credential: it
	// stores artifacts (over HTTP; a NATS transport stores them on the
	// bus), fetches input attachments and confirms the credential.
	API *restclient.Client
	// Adapter is the local adapter.
	Adapter *adapterclient.Client
	// Ledger records what the runtime did; nil records nothing.
	Ledger *ledger.Ledger
	// Platform is passed to the adapter in every task (seed 000).
	Platform    adapterapi.Platform
	Concurrency int
	TaskTimeout time.Duration
	DrainGrace  time.Duration
	// AdapterWait is Config.AdapterWait.
	AdapterWait time.Duration
	// HeartbeatInterval and RenewInterval default to a third of the
	// platform's heartbeat timeout and lease (from Hello).
	HeartbeatInterval time.Duration
	RenewInterval     time.Duration
	OnHeartbeat       func(at time.Time)
	// SealingKey is Config.SealingKey: the profile's private sealing key.
	SealingKey string
	// Tools serves each run's delegation tools to its host; nil gives the
	// host none.
	Tools   *toolserver.Server
	Metrics *Metrics
	Logger  zerolog.Logger
}

// NewRuntime builds the official runtime: artifacts stored and input
// attachments fetched with the runtime's credential, the agent's current
// instructions asked for before each task, heartbeats and lease renewals
// paced by the platform's timings, and a refused heartbeat checked against
// the REST API.
func NewRuntime(cfg RuntimeConfig) *Engine {
	hello := cfg.Hello
	if hello == nil {
		hello = &meshapi.HelloResponse{}
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = time.Duration(max(hello.HeartbeatTimeoutMS, 3000)) * time.Millisecond / 3
	}
	if cfg.RenewInterval == 0 {
		cfg.RenewInterval = time.Duration(max(hello.LeaseMS, 1500)) * time.Millisecond / 3
	}
	return New(Config{
		AgentID: cfg.AgentID, RuntimeID: cfg.RuntimeID, Transport: cfg.Transport, Adapter: cfg.Adapter,
		Artifacts: cfg.Transport.Artifacts(), Attachments: HTTPArtifacts{API: cfg.API}, Ledger: cfg.Ledger, Platform: cfg.Platform,
		Instructions: hello.Instructions, FreshInstructions: true,
		Concurrency: cfg.Concurrency, TaskTimeout: cfg.TaskTimeout, DrainGrace: cfg.DrainGrace,
		AdapterWait:       cfg.AdapterWait,
		HeartbeatInterval: cfg.HeartbeatInterval, RenewInterval: cfg.RenewInterval,
		OnHeartbeat: cfg.OnHeartbeat,
		Tools:       cfg.Tools,
		SealingKey:  cfg.SealingKey,
		CheckCredential: func(ctx context.Context) error {
			_, err := HTTPHello(ctx, cfg.API)
			return err
		},
		Metrics: cfg.Metrics,
		Logger:  cfg.Logger,
	})
}
