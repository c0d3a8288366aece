package platform_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"
)

// TestServe_ServicesStartedOneByOneMeetOnlyOnTheBus runs `a2a-platform serve`
// for each of the services, each with its own connection to a plain NATS
// server with JetStream and an auth callout, and drives the runtime
// lifecycle through the gateway. Stopping one service shows the gateway
// reaches it only over the bus.
func TestServe_ServicesStartedOneByOneMeetOnlyOnTheBus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logs := &meshtest.Logs{}
	log := zerolog.New(logs).Level(zerolog.DebugLevel)

	issuer, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	serviceKey, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	issuerPub, _ := issuer.PublicKey()
	servicePub, _ := serviceKey.PublicKey()
	server, err := embedded.Start(embedded.Config{
		StoreDir: filepath.Join(dir, "jetstream"), Listen: "127.0.0.1:0",
		Accounts: bus.AccountsConfig{Services: bus.NATSUser{Nkey: servicePub}, AuthIssuer: issuerPub}.Render(), Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Shutdown)

	issuerSeed, _ := issuer.Seed()
	serviceSeed, _ := serviceKey.Seed()
	ownerToken := secret.NewToken(secret.PrefixOwner)
	files := map[string][]byte{"issuer.nk": issuerSeed, "service.nk": serviceSeed, "owner.token": []byte(ownerToken + "\n")}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := platform.ServeConfig{
		Config: platform.Config{
			DataDir: dir, HTTPAddr: "127.0.0.1:0", NATSAdvertise: server.ClientURL(),
			Lease: 2 * time.Second, HeartbeatTimeout: 3 * time.Second, ShutdownGrace: 2 * time.Second, Logger: log,
		},
		NATSURL:            server.ClientURL(),
		NATSNkeySeedFile:   filepath.Join(dir, "service.nk"),
		AuthIssuerSeedFile: filepath.Join(dir, "issuer.nk"),
		OwnerTokenFile:     filepath.Join(dir, "owner.token"),
	}
	serve := func(service string) *platform.Running {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cfg := base
		cfg.Service = service
		if service == "taskqueue" {
			cfg.MetricsListen = "127.0.0.1:0"
		}
		r, err := platform.Serve(ctx, cfg)
		if err != nil {
			t.Fatalf("serve %s: %v\n%s", service, err, logs.String())
		}
		return r
	}
	running := map[string]*platform.Running{}
	for _, name := range platform.Services {
		running[name] = serve(name)
	}
	t.Cleanup(func() {
		for _, name := range platform.Services {
			if r := running[name]; r != nil {
				r.Stop()
			}
		}
	})
	addr := running["gateway"].HTTPAddr()
	if addr == "" || running["taskqueue"].HTTPAddr() != "" {
		t.Fatalf("HTTP addresses: gateway %q, taskqueue %q", addr, running["taskqueue"].HTTPAddr())
	}
	p := meshtest.Remote(t, "http://"+addr, ownerToken)
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/readyz"}).Expect(t, http.StatusOK)

	// The runtime lifecycle, across five services, through the sixth.
	agent := p.CreateAgent("distributed")
	rt := p.Attach(agent.ID)
	if rt.NATS.URL != server.ClientURL() {
		t.Fatalf("pairing advertised NATS at %q, want %q", rt.NATS.URL, server.ClientURL())
	}
	p.WaitRuntimeView(t, agent.ID, rt.RuntimeID, meshtest.Listed)
	p.Heartbeat(t, rt.RuntimeToken)
	if v := p.RuntimeView(t, agent.ID, rt.RuntimeID); v.Status != mesh.PresenceOnline {
		t.Fatalf("runtime is %s after its heartbeat", v.Status)
	}
	run := p.CreateTask(agent.ID, "hello")
	events := p.StreamEvents(t, url.Values{"task_run_id": {run.ID}, "since": {"1m"}})
	if got := p.PullRun(t, agent.ID, rt.RuntimeToken); got.ID != run.ID || got.Attempt != 1 {
		t.Fatalf("pulled %s attempt %d", got.ID, got.Attempt)
	}
	p.Report(t, run.ID, "progress", rt.RuntimeToken, map[string]any{"message": "half", "percent": 50}).Expect(t, http.StatusOK)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/artifacts", RuntimeToken: rt.RuntimeToken,
		JSON: map[string]any{"filename": "out.txt", "content_text": "artifact"}}).Expect(t, http.StatusCreated)
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "world"}}).Expect(t, http.StatusOK)
	done := p.GetTask(run.ID)
	if done.Status != mesh.StatusCompleted || string(done.Output) != `{"text":"world"}` || len(done.Artifacts) != 1 {
		t.Fatalf("completed run: %+v", done)
	}
	evs := events.Until(t, 10*time.Second, meshtest.TypeIs("task_run.completed", run.ID))
	if len(evs) != 5 {
		t.Fatalf("events of the run: %d, want created, claimed, progress, artifact.created, completed", len(evs))
	}
	// Each serve process exposes its own metrics when asked (--metrics-listen).
	if running["agents"].MetricsAddr() != "" {
		t.Fatal("a process serves metrics without --metrics-listen")
	}
	metrics := meshtest.Remote(t, "http://"+running["taskqueue"].MetricsAddr(), "").Send(t, meshtest.Request{Method: http.MethodGet, Path: "/metrics"}).Expect(t, http.StatusOK)
	for _, line := range []string{`a2amesh_task_runs{status="completed"} 1`, `a2amesh_claim_latency_seconds_count 1`,
		`a2amesh_events_published_total{service="taskqueue",type="dev.a2amesh.task_run.completed"} 1`} {
		if !strings.Contains(string(metrics.Body), line+"\n") {
			t.Errorf("taskqueue metrics lack %q", line)
		}
	}

	// The callout, answered by the credential service's own connection, admits
	// the runtime on NATS; the registry answers its heartbeat there.
	nc, err := nats.Connect(server.ClientURL(), nats.Token(rt.RuntimeToken), nats.CustomInboxPrefix(rt.NATS.InboxPrefix))
	if err != nil {
		t.Fatalf("runtime NATS connection: %v", err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := meshapi.NewClient(nc).Runtime(agent.ID, rt.RuntimeID).Heartbeat(ctx, meshapi.HeartbeatRequest{}); err != nil {
		t.Fatalf("heartbeat over NATS: %v", err)
	}
	if _, err := nats.Connect(server.ClientURL(), nats.Token("a2art_wrong"), nats.MaxReconnects(0)); err == nil {
		t.Fatal("a wrong runtime token was admitted")
	}

	// Without the task queue, the gateway cannot create runs: it has no
	// other way to the service than the bus.
	running["taskqueue"].Stop()
	running["taskqueue"] = nil
	p.CreateTaskWith(t, map[string]any{"target_agent_id": agent.ID, "input": map[string]any{"text": "nobody home"}}).
		ExpectError(t, http.StatusServiceUnavailable, mesh.CodeUnavailable)
	running["taskqueue"] = serve("taskqueue")
	again := p.CreateTask(agent.ID, "back again")
	if got := p.PullRun(t, agent.ID, rt.RuntimeToken); got.ID != again.ID {
		t.Fatalf("pulled %s after the task queue came back, want %s", got.ID, again.ID)
	}
}
