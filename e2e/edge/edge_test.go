package edge

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/internal/testkit/natsserver"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// TestEdges runs two regions, east and west, each a NATS cluster of its own
// with every service, and checks how runtimes and sites reach them. The
// deployment is shared: starting it is most of the cost.
func TestEdges(t *testing.T) {
	d := startRegions(t, "east", "west")
	endpoint := d.startAdapter()
	t.Run("a runtime connects to its home region and falls back to another", func(t *testing.T) {
		runtimeFollowsItsRegion(t, d, endpoint)
	})
	t.Run("a runtime whose agent moved to another region connects there when it starts", func(t *testing.T) {
		runtimeFollowsAMove(t, d, endpoint)
	})
	t.Run("a webhook of an agent that moves follows it to its new home region", func(t *testing.T) {
		webhookFollowsAMove(t, d)
	})
	t.Run("a runtime behind the shipped leaf node claims and completes runs", func(t *testing.T) {
		runtimeBehindALeaf(t, d, endpoint)
	})
	t.Run("a leaf node running a JetStream of its own in a domain of its own carries the runtime too", func(t *testing.T) {
		runtimeBehindALeaf(t, d, endpoint, fmt.Sprintf("jetstream { domain: site-lab, store_dir: %q }", t.TempDir()))
	})
	t.Run("a leaf node that cannot reach the platform is named as the cause", func(t *testing.T) {
		leafWithoutThePlatform(t, d, endpoint)
	})
}

// runtimeFollowsItsRegion: an agent homed in west, paired through east,
// gets west's address first and east's as a fallback; its runtime connects
// to west, when west's address stops answering it goes on through east,
// slower but working, and says so, and when west's address answers again
// it comes back.
func runtimeFollowsItsRegion(t *testing.T, d *deployment, endpoint string) {
	agent := d.createAgent("east", "homed in west", "west")
	m := d.pair(agent, "east", endpoint)
	n := m.profile.NATS
	if n.Region != "west" || n.URL != d.regions["west"].front.URL() || len(n.Fallbacks) != 1 ||
		n.Fallbacks[0].Region != "east" || n.Fallbacks[0].URL != d.regions["east"].front.URL() {
		t.Fatalf("the profile's NATS details: %+v; want west's address, then east's", n)
	}
	rt := m.start("--transport", "nats")
	s := m.waitConnected(rt, "nats", "west")
	if s.HomeRegion != "west" {
		t.Fatalf("status shows home region %q, want west", s.HomeRegion)
	}
	m.completes("west", "at home")

	d.regions["west"].front.Block()
	m.waitConnected(rt, "nats", "east")
	if text := m.statusText(); !strings.Contains(text, "region east (not the home region west") {
		t.Fatalf("status does not say the runtime works through another region:\n%s", text)
	}
	m.completes("west", "through east")
	m.completes("east", "created in east, through east")

	// Once west's address answers again, the runtime goes back (it checks
	// every 30 s).
	d.regions["west"].front.Unblock()
	m.waitConnected(rt, "nats", "west")
	if meshtest.LogLine(rt.Logs.String(), "the home region's servers take connections again; reconnecting to them") == nil {
		t.Fatalf("the runtime did not say why it reconnected:\n%s", d.procs.Mask(rt.Logs.String()))
	}
	m.completes("west", "back home")
}

// runtimeFollowsAMove: an agent paired while homed in east is moved to
// west; its runtime, started with the profile from before the move, is told
// where to connect now, stores it, connects to west and works there.
func runtimeFollowsAMove(t *testing.T, d *deployment, endpoint string) {
	agent := d.createAgent("east", "moves west", "east")
	m := d.pair(agent, "east", endpoint)
	if m.profile.NATS.Region != "east" {
		t.Fatalf("paired with home region %q, want east", m.profile.NATS.Region)
	}
	d.regions["east"].p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true,
		JSON: map[string]any{"home_region": "west"}}).Expect(t, http.StatusOK)

	rt := m.start("--transport", "nats")
	if s := m.waitConnected(rt, "nats", "west"); s.HomeRegion != "west" {
		t.Fatalf("status shows home region %q after the move, want west", s.HomeRegion)
	}
	n := m.readProfile().NATS
	if n.Region != "west" || n.URL != d.regions["west"].front.URL() || len(n.Fallbacks) != 1 ||
		n.Fallbacks[0].Region != "east" || n.Fallbacks[0].URL != d.regions["east"].front.URL() {
		t.Fatalf("the profile's NATS details after the move: %+v; want west's address, then east's", n)
	}
	if meshtest.LogLine(rt.Logs.String(), "the platform gives this runtime new NATS addresses (its agent's home region may have moved); connecting with them") == nil {
		t.Fatalf("the runtime did not say why it connected elsewhere:\n%s", d.procs.Mask(rt.Logs.String()))
	}
	m.completes("west", "after the move")
}

// startLeaf runs deploy/nats/leaf.conf as shipped with hubURL as its remote
// and returns the site's client URL. Extra configuration, when given, is
// added after the shipped file.
func startLeaf(t *testing.T, hubURL string, extra ...string) (string, *natsserver.Process) {
	t.Helper()
	site := meshtest.FreeAddr(t)
	conf := filepath.Join("..", "..", "deploy", "nats", "leaf.conf")
	if len(extra) > 0 {
		shipped, err := os.ReadFile(conf)
		if err != nil {
			t.Fatal(err)
		}
		conf = filepath.Join(t.TempDir(), "leaf.conf")
		if err := os.WriteFile(conf, []byte(string(shipped)+"\n"+strings.Join(extra, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	leaf := natsserver.Start(t, conf, map[string]string{
		"MESH_LEAF_LISTEN":  site,
		"MESH_LEAF_HUB_URL": hubURL,
		"MESH_LEAF_MONITOR": meshtest.FreeAddr(t),
	}, site)
	return "nats://" + site, leaf
}

// leafHubURL is west's leaf node address with userinfo.
func (d *deployment) leafHubURL(userinfo string) string {
	return strings.Replace(d.sc.LeafURL("west", 0), "nats-leaf://", "nats-leaf://"+userinfo+"@", 1)
}

// runtimeBehindALeaf: the shipped leaf (or the same with a JetStream of
// the site's own, in a domain of its own) carries a runtime's work.
func runtimeBehindALeaf(t *testing.T, d *deployment, endpoint string, extra ...string) {
	agent := d.createAgent("west", "at a site", "west")
	m := d.pair(agent, "west", endpoint)
	site, leaf := startLeaf(t, d.leafHubURL("runtime:"+m.profile.RuntimeToken), extra...)
	rt := m.start("--transport", "nats", "--nats-url", site)
	meshtest.Eventually(t, 60*time.Second, func() bool {
		s := m.status()
		return s.Connection != nil && s.Connection.Transport == "nats" && s.Connection.Server == site
	}, func() string {
		return "the runtime never connected through the leaf:\n" + d.procs.Mask(rt.Logs.String()+leaf.Logs())
	})
	if text := m.statusText(); !strings.Contains(text, "region none (a server of cluster a2a-mesh-site, not one of the platform's regions") {
		t.Fatalf("status does not say the runtime is connected to a server outside the regions:\n%s", text)
	}
	for i := range 5 {
		m.completes("west", fmt.Sprintf("site task %d", i))
	}
}

// leafWithoutThePlatform: the site's leaf runs, but its remote reaches no
// platform (the hub is down or refuses it). A runtime told to use NATS
// stops with an error that says so; one in auto mode says so in its log
// and its status, and works over HTTP.
func leafWithoutThePlatform(t *testing.T, d *deployment, endpoint string) {
	agent := d.createAgent("west", "at a cut-off site", "west")
	m := d.pair(agent, "west", endpoint)
	nowhere := "nats-leaf://runtime:" + m.profile.RuntimeToken + "@" + meshtest.FreeAddr(t)
	site, _ := startLeaf(t, nowhere)

	out, err := m.command("start", "--transport", "nats", "--nats-url", site).CombinedOutput()
	if err == nil {
		t.Fatalf("a2a-runtime start over a leaf without the platform did not stop:\n%s", d.procs.Mask(string(out)))
	}
	const cause = "took the connection, but nothing answers the runtime's hello there; if it is a site's leaf node, its connection to the platform is down or was refused"
	if !strings.Contains(string(out), cause) || !strings.Contains(string(out), site) {
		t.Fatalf("a2a-runtime start does not name the leaf as the cause:\n%s", d.procs.Mask(string(out)))
	}

	rt := m.start("--nats-url", site)
	s := m.waitConnected(rt, "http", "")
	if !strings.Contains(s.Connection.NATSError, cause) {
		t.Fatalf("status does not say why NATS is not used: %+v", s.Connection)
	}
	line := meshtest.LogLine(rt.Logs.String(), "the platform does not answer through its NATS server; working over HTTP until this runtime is restarted")
	if line == nil || line["level"] != "error" || !strings.Contains(fmt.Sprint(line["error"]), cause) {
		t.Fatalf("no error line names the cause:\n%s", d.procs.Mask(rt.Logs.String()))
	}
	if strings.Contains(rt.Logs.String(), "bind queue consumer: nats: no responders available for request") {
		t.Fatalf("the runtime still logs the bare no-responders error:\n%s", d.procs.Mask(rt.Logs.String()))
	}
	m.completes("west", "over HTTP")
	if !strings.Contains(m.statusText(), "NATS not used: "+runtimeengine.ErrNoPlatform.Error()) {
		t.Fatalf("status text does not say why NATS is not used:\n%s", m.statusText())
	}
}

// webhookFollowsAMove: a webhook of a west agent reads west's event stream;
// once the agent moved to east, the events of its runs there reach the
// webhook too.
func webhookFollowsAMove(t *testing.T, d *deployment) {
	west, east := d.regions["west"].p, d.regions["east"].p
	agent := d.createAgent("west", "moves east", "west")
	hook, hookURL := webhookReceiver(t)
	west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/webhooks", Owner: true,
		JSON: map[string]any{"url": hookURL, "agent_id": agent.ID}}).Expect(t, http.StatusCreated)
	before := west.CreateTask(agent.ID, "before the move")
	meshtest.Eventually(t, 30*time.Second, func() bool { return hook.has(mesh.EventTaskRunCreated, before.ID) }, func() string {
		return "the webhook was not given the run created before the move"
	})
	// An agent moves only without open runs.
	west.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + before.ID + "/cancel", Owner: true, JSON: map[string]any{}}).
		Expect(t, http.StatusOK)
	west.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true,
		JSON: map[string]any{"home_region": "east"}}).Expect(t, http.StatusOK)
	// East's task queue sees the move once it lists the agent's runs from
	// east, which keeps none yet.
	meshtest.Eventually(t, 30*time.Second, func() bool {
		var l meshapi.TaskRunList
		east.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?limit=1&agent_id=" + agent.ID, Owner: true}).
			Expect(t, http.StatusOK).Decode(t, &l)
		return len(l.TaskRuns) == 0
	}, func() string { return "east's task queue never saw the agent move to east" })
	after := east.CreateTask(agent.ID, "after the move")
	if after.Region != "east" {
		t.Fatalf("a run of the agent after its move is kept in %q; want east", after.Region)
	}
	// The webhook's worker looks for the move once its stream has nothing
	// more (a pull waits 30 s).
	meshtest.Eventually(t, 90*time.Second, func() bool { return hook.has(mesh.EventTaskRunCreated, after.ID) }, func() string {
		return "the webhook was not given the run created in east after the move"
	})
	if again := hook.repeated(); len(again) > 0 {
		t.Fatalf("the webhook received %d events more than once: %v", len(again), again)
	}
}
