package meshtest

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/adapter"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
)

// AgentOptions tune an online agent.
type AgentOptions struct {
	// Name and Skills of the agent account (a name is made up when empty).
	Name   string
	Skills []mesh.Skill
	// Provider answers the tasks; default the echo provider.
	Provider provider.Provider
	// Concurrency is how many runs the runtime works on at once; default 1.
	Concurrency int
	// Transport is the runtime's transport: runtimeengine.ModeNATS (the
	// default) or runtimeengine.ModeHTTP.
	Transport string
}

// OnlineAgent is an agent account with a runtime connected over NATS (the
// official runtime's engine, in process) and a local adapter behind it: a
// task sent to the agent runs for real, from claim to report.
type OnlineAgent struct {
	Agent    mesh.Agent
	Attached Attached
	stop     func()
	// taskConns counts the adapter's connections that carried tasks.
	taskConns atomic.Int64
}

// AdapterTaskConnections is how many connections the agent's adapter
// accepted whose first request was a task (not a /health check).
func (a *OnlineAgent) AdapterTaskConnections() int64 { return a.taskConns.Load() }

// taskCounting counts the connections it accepts whose first request is a
// task.
type taskCounting struct {
	net.Listener
	n *atomic.Int64
}

func (l taskCounting) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &firstRequestConn{Conn: c, n: l.n}, nil
}

// firstRequestConn reads its first request line as it goes by and counts
// the connection when the request is a task.
type firstRequestConn struct {
	net.Conn
	n    *atomic.Int64
	mu   sync.Mutex
	head []byte
	read bool
}

func (c *firstRequestConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read {
		c.head = append(c.head, p[:n]...)
		if line, _, ok := bytes.Cut(c.head, []byte("\n")); ok || len(c.head) >= 256 {
			c.read = true
			if bytes.HasPrefix(line, []byte("POST /run-task ")) || bytes.HasPrefix(line, []byte("POST /execute ")) {
				c.n.Add(1)
			}
			c.head = nil
		}
	}
	return n, err
}

// Stop disconnects the runtime and stops the adapter (the test's cleanup
// does it too; stopping early takes the agent offline).
func (a *OnlineAgent) Stop() { a.stop() }

// StartOnlineAgent creates an agent on p and brings it online.
func StartOnlineAgent(t testing.TB, p *Platform, o AgentOptions) *OnlineAgent {
	t.Helper()
	if o.Name == "" {
		o.Name = "online agent"
	}
	if o.Provider == nil {
		o.Provider = provider.Echo{}
	}
	var agent mesh.Agent
	p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": o.Name, "skills": o.Skills}, &agent)
	return ConnectAgent(t, p, agent, o)
}

// ConnectAgent pairs a new runtime with an existing agent and brings it
// online (a machine coming back, or a platform restarted with the agent).
func ConnectAgent(t testing.TB, p *Platform, agent mesh.Agent, o AgentOptions) *OnlineAgent {
	t.Helper()
	if o.Provider == nil {
		o.Provider = provider.Echo{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Paired, connected and sent home as a2a-runtime pair and start do.
	prof, err := runtimeengine.Pair(ctx, runtimeengine.PairRequest{
		Code: p.PairingCode(agent.ID), APIBase: p.APIBase, DeviceName: "test-device",
		LocalExecutor: profile.LocalExecutor{Type: "custom"},
	})
	if err != nil {
		t.Fatalf("pair: %v", err)
	}
	att := Attached{AgentID: prof.AgentID, RuntimeID: prof.RuntimeID, RuntimeToken: prof.RuntimeToken, HeartbeatTimeoutMS: prof.HeartbeatTimeoutMS}
	att.NATS.URL, att.NATS.WSURL, att.NATS.InboxPrefix = prof.NATS.URL, prof.NATS.WSURL, prof.NATS.InboxPrefix
	// The adapter takes work only with a per-start secret, as the adapter
	// a2a-runtime start runs does (and only then takes a task's variables).
	adapterToken := secret.NewToken("a2aadp_")
	srv, err := adapter.New(adapter.Config{Provider: o.Provider, Workdir: t.TempDir(), AuthToken: adapterToken, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatalf("adapter: %v", err)
	}
	a := &OnlineAgent{Agent: agent, Attached: att}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("adapter listen: %v", err)
	}
	go func() { _ = srv.Serve(taskCounting{Listener: ln, n: &a.taskConns}) }()
	ac, err := adapterclient.New("http://" + ln.Addr().String() + "/run-task")
	if err != nil {
		t.Fatal(err)
	}
	ac.SetAuthToken(adapterToken)
	api, err := restclient.New(prof.APIBase, restclient.WithRuntimeToken(prof.RuntimeToken))
	if err != nil {
		t.Fatal(err)
	}
	if o.Transport == "" {
		o.Transport = runtimeengine.ModeNATS
	}
	// The runtime a2a-runtime start builds (ledger and tool server
	// included), with short intervals.
	rt, err := runtimeengine.Start(ctx, runtimeengine.Options{
		Profile: prof, Mode: o.Transport, API: api, Adapter: ac, LedgerDir: t.TempDir(),
		HeartbeatInterval: time.Second, RenewInterval: time.Second, DrainGrace: time.Second,
		Concurrency: o.Concurrency, Logger: zerolog.Nop(),
	})
	if err != nil {
		t.Fatalf("runtime start: %v", err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rt.Run(runCtx)
	}()
	stopped := false
	a.stop = func() {
		if stopped {
			return
		}
		stopped = true
		stopRun()
		rt.StopNow()
		<-done
		rt.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	t.Cleanup(a.Stop)
	// Online once the platform has seen a heartbeat.
	Eventually(t, 10*time.Second, func() bool {
		var l struct {
			Runtimes []mesh.RuntimeView `json:"runtimes"`
		}
		p.Do(http.MethodGet, "/agent-accounts/"+agent.ID+"/runtimes", nil, &l)
		return len(l.Runtimes) > 0 && l.Runtimes[0].Status == mesh.PresenceOnline
	}, func() string { return "the runtime never came online" })
	return a
}
