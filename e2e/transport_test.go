package e2e

import (
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// transportOf is the transport the runtime says it started with.
func transportOf(t *testing.T, rt *proc) string {
	t.Helper()
	line := rt.logLine("runtime started")
	if line == nil {
		t.Fatalf("the runtime never logged that it started:\n%s", rt.output())
	}
	s, _ := line["transport"].(string)
	return s
}

// The REST transport of seed 001 does the whole happy path on its own.
func TestTransport_HTTPCompletesTheHappyPath(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	c := l.connect(p, l.startAdapter("echo").Endpoint, "--transport", "http")
	if got := transportOf(t, c.rt); got != "http" {
		t.Fatalf("transport %q, want http", got)
	}
	done := waitEnded(t, p.Platform, c.task("over http").ID, mesh.StatusCompleted, waitStart)
	if outputOf(t, done)["text"] != "over http" {
		t.Errorf("output %s", done.Output)
	}
	if started := c.m.ledger(c.AgentID)[0]; started.Event != "runtime_started" || !strings.Contains(started.Message, "http") {
		t.Errorf("first ledger entry %+v, want runtime_started over http", started)
	}
}

// In auto mode a NATS URL that cannot be reached — given on the command
// line, or advertised by the platform (as pairing stores it in the
// profile) — makes the runtime work over HTTP.
func TestTransport_AutoFallsBackToHTTPWhenNATSIsUnreachable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		advertised bool
	}{
		{"nats-url flag", false},
		{"advertised nats url", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLab(t)
			bad := "nats://" + meshtest.FreeAddr(t)
			var opts platformOptions
			args := []string{"--transport", "auto"}
			if tc.advertised {
				opts.env = []string{"A2A_MESH_NATS_ADVERTISE=" + bad}
			} else {
				args = append(args, "--nats-url", bad)
			}
			p := l.startPlatform(opts)
			ad := l.startAdapter("echo")
			agent := p.CreateAgent("fallback")
			m := l.newMachine()
			pr := m.pair(p.Platform, agent.ID, ad.Endpoint)
			rt := m.startRuntime(args...)
			if got := transportOf(t, rt); got != "http" {
				t.Fatalf("transport %q, want the http fallback", got)
			}
			if !strings.Contains(rt.output(), "NATS unreachable; using the HTTP transport") {
				t.Errorf("the runtime did not say why it fell back:\n%s", rt.output())
			}
			waitOnline(t, p.Platform, agent.ID, pr.RuntimeID)
			done := waitEnded(t, p.Platform, p.CreateTask(agent.ID, "fallback").ID, mesh.StatusCompleted, waitStart)
			if outputOf(t, done)["text"] != "fallback" {
				t.Errorf("output %s", done.Output)
			}
		})
	}
}

// A profile whose NATS URL no longer answers (the platform's address
// changed since pairing) is mended at start: the runtime, over HTTP for a
// moment, is told the platform's address now, stores it and works over NATS.
func TestTransport_AStaleProfileURLIsReplacedByThePlatformsAddress(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	ad := l.startAdapter("echo")
	agent := p.CreateAgent("moved address")
	m := l.newMachine()
	pr := m.pair(p.Platform, agent.ID, ad.Endpoint)
	current := m.profileFile().Profiles[pr.Name()].NATS.URL
	m.editProfileFile(func(f map[string]any) {
		prof := f["profiles"].(map[string]any)[pr.Name()].(map[string]any)
		prof["nats"].(map[string]any)["url"] = "nats://" + meshtest.FreeAddr(t)
	})
	rt := m.startRuntime("--transport", "auto")
	if got := transportOf(t, rt); got != "nats" {
		t.Fatalf("transport %q, want nats once the platform gave its address", got)
	}
	if !strings.Contains(rt.output(), "the platform gives this runtime new NATS addresses") {
		t.Errorf("the runtime did not say it took new addresses:\n%s", rt.output())
	}
	if got := m.profileFile().Profiles[pr.Name()].NATS.URL; got != current {
		t.Errorf("profile NATS URL %q after the start, want the platform's %q", got, current)
	}
	done := waitEnded(t, p.Platform, p.CreateTask(agent.ID, "mended").ID, mesh.StatusCompleted, waitStart)
	if outputOf(t, done)["text"] != "mended" {
		t.Errorf("output %s", done.Output)
	}
}

// A region the profile lists and the platform's answer leaves out stays in
// the profile: the region that answers may not have heard of every other
// region yet (its copy of the regions' addresses is still catching up), and
// a runtime that forgot a region could not fall back to it when its home
// region stops answering.
func TestTransport_ARegionTheAnswerLeavesOutIsKeptAsAFallback(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	ad := l.startAdapter("echo")
	agent := p.CreateAgent("keeps north")
	m := l.newMachine()
	pr := m.pair(p.Platform, agent.ID, ad.Endpoint)
	current := m.profileFile().Profiles[pr.Name()].NATS.URL
	north := "nats://" + meshtest.FreeAddr(t)
	m.editProfileFile(func(f map[string]any) {
		n := f["profiles"].(map[string]any)[pr.Name()].(map[string]any)["nats"].(map[string]any)
		n["url"] = "nats://" + meshtest.FreeAddr(t)
		n["fallbacks"] = []any{map[string]any{"region": "north", "url": north}}
	})
	rt := m.startRuntime("--transport", "auto")
	if got := transportOf(t, rt); got != "nats" {
		t.Fatalf("transport %q, want nats once the platform gave its address", got)
	}
	n := m.profileFile().Profiles[pr.Name()].NATS
	if n.URL != current || len(n.Fallbacks) != 1 || n.Fallbacks[0].Region != "north" || n.Fallbacks[0].URL != north {
		t.Errorf("profile NATS details after the start: %+v; want the platform's address %q, then north's %q", n, current, north)
	}
	done := waitEnded(t, p.Platform, p.CreateTask(agent.ID, "kept").ID, mesh.StatusCompleted, waitStart)
	if outputOf(t, done)["text"] != "kept" {
		t.Errorf("output %s", done.Output)
	}
}

// --transport nats does not fall back: with NATS unreachable the runtime
// stops with an error that names NATS (not a request to pair again).
func TestTransport_NATSOnlyStopsWhenNATSIsUnreachable(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.CreateAgent("nats-only")
	m := l.newMachine()
	m.pair(p.Platform, agent.ID, "http://127.0.0.1:18792/run-task")
	rt := m.spawnRuntime("--transport", "nats", "--nats-url", "nats://"+meshtest.FreeAddr(t))
	if code := rt.waitExit(t, waitStart); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if out := rt.stderr.String(); !strings.Contains(out, "nats") || strings.Contains(out, "pair again") {
		t.Errorf("stderr does not explain the NATS failure:\n%s", out)
	}
}

// NATS over WebSocket carries the whole happy path.
func TestTransport_WebSocketCompletesTheHappyPath(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{webSocket: true})
	if !strings.HasPrefix(p.WSURL, "ws://127.0.0.1:") {
		t.Fatalf("the platform has no loopback WebSocket URL: %q", p.WSURL)
	}
	c := l.connect(p, l.startAdapter("echo").Endpoint, "--transport", "nats", "--nats-url", p.WSURL)
	if got := transportOf(t, c.rt); got != "nats" {
		t.Fatalf("transport %q, want nats", got)
	}
	if line := c.rt.logLine("connected"); line == nil || line["url"] != p.WSURL {
		t.Errorf("the runtime did not connect to %s: %v", p.WSURL, line)
	}
	done := waitEnded(t, p.Platform, c.task("over websocket").ID, mesh.StatusCompleted, waitStart)
	if outputOf(t, done)["text"] != "over websocket" {
		t.Errorf("output %s", done.Output)
	}
}
