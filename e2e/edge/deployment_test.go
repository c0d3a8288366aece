package edge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/clustertest"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// Timings long enough that a busy machine never loses a run whose runtime
// is alive, and short enough that a runtime's new connection is recorded
// soon (it heartbeats every third of the timeout).
const (
	testLease            = 15 * time.Second
	testHeartbeatTimeout = 9 * time.Second
)

// agentScript completes every task with a reply naming it, and writes the
// reply to a file too (the run's artifact reply.txt).
const agentScript = `read -r text
echo "done: $text"
echo "done: $text" > "$A2A_OUTPUT_DIR/reply.txt"
`

// region is one region of the deployment: its NATS cluster, every service
// as `a2a-platform serve` processes, and the address its runtimes are told
// (a proxy in front of its servers, which the test can make unreachable).
type region struct {
	name  string
	front *clustertest.Proxy
	api   string
	p     *meshtest.Platform
	// health is each process's --metrics-listen address (/healthz,
	// /readyz), by service.
	health map[string]string
}

// deployment is the platform across regions as an operator runs it: a
// NATS supercluster (a cluster per region, joined by gateways) and, in each
// region, each service as its own process.
type deployment struct {
	t       *testing.T
	sc      *clustertest.Supercluster
	dir     string
	owner   string
	regions map[string]*region
	procs   *meshtest.Procs
	// origin is the region that holds the global records, given to every
	// process (--origin-region).
	origin string
}

// startRegions starts a supercluster of one-server regions and every service
// in each, all at once, the first region named the origin (so it holds the
// global records whichever region's services get there first), and waits
// until every gateway answers /readyz and every program says it is ready.
func startRegions(t *testing.T, names ...string) *deployment {
	t.Helper()
	return startServicesOn(t, superclusterOf(t, names...), names...)
}

// superclusterOf starts a supercluster of one-server regions.
func superclusterOf(t *testing.T, names ...string) *clustertest.Supercluster {
	t.Helper()
	var rs []clustertest.Region
	for _, n := range names {
		rs = append(rs, clustertest.Region{Name: n})
	}
	return clustertest.StartSupercluster(t, clustertest.SuperclusterOptions{Regions: rs})
}

// startServicesOn starts every service of each region on sc as
// startRegions does.
func startServicesOn(t *testing.T, sc *clustertest.Supercluster, names ...string) *deployment {
	t.Helper()
	d := &deployment{t: t, sc: sc,
		dir: t.TempDir(), owner: secret.NewToken(secret.PrefixOwner), regions: map[string]*region{}, procs: meshtest.NewProcs(t), origin: names[0]}
	d.procs.Secret(d.owner, d.sc.Password(), d.sc.IssuerSeed())
	d.dumpOnFailure()
	for name, content := range map[string]string{"issuer.nk": d.sc.IssuerSeed(), "owner.token": d.owner + "\n"} {
		if err := os.WriteFile(filepath.Join(d.dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		d.regions[n] = d.startServices(n)
	}
	for _, n := range names {
		meshtest.WaitReady(t, d.regions[n].api, 120*time.Second, &meshtest.Logs{})
	}
	// A gateway is ready before the services behind it answer, and a
	// region's service is not found by asking on the bus: another region's
	// copy answers while this region's still starts. Each program says when
	// it is ready.
	d.procs.WaitLogged(120*time.Second, "service ready")
	return d
}

// startServices runs every service of one region against its servers. The
// region's name comes from its NATS cluster, as it does by default.
func (d *deployment) startServices(name string) *region {
	t := d.t
	r := &region{name: name, front: clustertest.NewProxy(t, strings.TrimPrefix(d.sc.URL(name, 0), "nats://")), health: map[string]string{}}
	r.api = "http://" + meshtest.FreeAddr(t)
	for _, svc := range platform.Services {
		r.health[svc] = meshtest.FreeAddr(t)
		args := []string{"serve", svc, "--data-dir", filepath.Join(d.dir, name+"-"+svc), "--nats-url", d.sc.URLs(name),
			"--log-level", "info", "--lease", testLease.String(), "--heartbeat-timeout", testHeartbeatTimeout.String(),
			"--metrics-listen", r.health[svc], "--origin-region", d.origin}
		switch svc {
		case "webhooks":
			args = append(args, "--allow-private-webhooks")
		case "credentials":
			args = append(args, "--auth-issuer-seed-file", filepath.Join(d.dir, "issuer.nk"), "--nats-advertise", r.front.URL())
		case "delegation":
			// Delegations are A2A calls to the region's gateway.
			args = append(args, "--gateway-url", r.api)
		case "gateway":
			args = append(args, "--owner-token-file", filepath.Join(d.dir, "owner.token"), "--http", strings.TrimPrefix(r.api, "http://"))
		}
		d.procs.Start(svc+" in "+name, []string{"A2A_MESH_NATS_PASSWORD=" + d.sc.Password()}, bins.Platform, args...)
	}
	r.p = meshtest.Remote(t, r.api, d.owner)
	return r
}

// dumpOnFailure shows the end of every program's output when the test fails.
func (d *deployment) dumpOnFailure() {
	d.t.Cleanup(func() {
		if !d.t.Failed() {
			return
		}
		for _, p := range d.procs.All() {
			d.t.Logf("---- %s ----\n%s", p.Name, meshtest.Tail(d.procs.Mask(p.Logs.String()), 3000))
		}
	})
}

// startAdapter runs a2a-adapter with the command provider and agentScript,
// and returns its run-task URL.
func (d *deployment) startAdapter() string {
	d.t.Helper()
	return d.procs.StartAdapter(bins.Adapter, agentScript, 0)
}

// machine is a runtime's machine: its home folder holds the profile.
type machine struct {
	d       *deployment
	home    string
	agentID string
	profile profile.Profile
}

// createAgent creates an agent through region via's gateway with the given
// home region.
func (d *deployment) createAgent(via, name, home string) mesh.Agent {
	d.t.Helper()
	var a mesh.Agent
	d.regions[via].p.Send(d.t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true,
		JSON: map[string]any{"name": name, "home_region": home}}).Expect(d.t, http.StatusCreated).Decode(d.t, &a)
	if a.HomeRegion != home {
		d.t.Fatalf("agent created with home region %q, want %q", a.HomeRegion, home)
	}
	return a
}

// pair pairs a new machine with agent through region via's gateway, as
// `a2a-runtime pair` does, and reads the profile it wrote.
func (d *deployment) pair(agent mesh.Agent, via, endpoint string) *machine {
	t := d.t
	t.Helper()
	m := &machine{d: d, home: t.TempDir(), agentID: agent.ID}
	code := d.regions[via].p.PairingCode(agent.ID)
	d.procs.Secret(code)
	out, err := m.command("pair", code, "--api-base", d.regions[via].api, "--local-agent-endpoint", endpoint).CombinedOutput()
	if err != nil {
		t.Fatalf("a2a-runtime pair: %v\n%s", err, d.procs.Mask(string(out)))
	}
	m.profile = m.readProfile()
	d.procs.Secret(m.profile.RuntimeToken)
	return m
}

func (m *machine) command(args ...string) *exec.Cmd {
	cmd := exec.Command(bins.Runtime, args...)
	cmd.Env = append(os.Environ(), "HOME="+m.home)
	return cmd
}

func (m *machine) readProfile() profile.Profile {
	m.d.t.Helper()
	var f struct {
		Profiles map[string]profile.Profile `json:"profiles"`
	}
	if err := json.Unmarshal([]byte(meshtest.ReadFile(filepath.Join(m.home, ".a2a", "runtime.json"))), &f); err != nil {
		m.d.t.Fatal(err)
	}
	for _, p := range f.Profiles {
		return p
	}
	m.d.t.Fatal("no profile written")
	return profile.Profile{}
}

// start runs `a2a-runtime start` with args on the machine.
func (m *machine) start(args ...string) *meshtest.Proc {
	return m.d.procs.Start("a2a-runtime of "+m.agentID, []string{"HOME=" + m.home}, bins.Runtime,
		append([]string{"start", "--log-level", "info"}, args...)...)
}

// status is `a2a-runtime status --json` on the machine.
func (m *machine) status() statusJSON {
	m.d.t.Helper()
	out, err := m.command("status", "--json").Output()
	if err != nil {
		m.d.t.Fatalf("a2a-runtime status: %v\n%s", err, out)
	}
	var s statusJSON
	if err := json.Unmarshal(out, &s); err != nil {
		m.d.t.Fatalf("a2a-runtime status --json: %v\n%s", err, out)
	}
	return s
}

// statusText is `a2a-runtime status` as people read it.
func (m *machine) statusText() string {
	m.d.t.Helper()
	out, err := m.command("status").Output()
	if err != nil {
		m.d.t.Fatalf("a2a-runtime status: %v\n%s", err, out)
	}
	return string(out)
}

type statusJSON struct {
	HomeRegion string              `json:"home_region"`
	Connection *profile.Connection `json:"connection"`
}

// waitConnected waits until the machine's status says it is connected over
// transport in region.
func (m *machine) waitConnected(rt *meshtest.Proc, transport, region string) statusJSON {
	m.d.t.Helper()
	var s statusJSON
	meshtest.Eventually(m.d.t, 60*time.Second, func() bool {
		if rt.Exited() {
			m.d.t.Fatalf("the runtime exited:\n%s", m.d.procs.Mask(rt.Logs.String()))
		}
		s = m.status()
		return s.Connection != nil && s.Connection.Transport == transport && s.Connection.Region == region
	}, func() string {
		return fmt.Sprintf("status never said %s in region %q: %+v\n%s", transport, region, s.Connection, m.d.procs.Mask(rt.Logs.String()))
	})
	return s
}

// completes creates a task for the machine's agent through region via's
// gateway and waits until it completed.
func (m *machine) completes(via, text string) {
	m.d.t.Helper()
	p := m.d.regions[via].p
	run := p.CreateTask(m.agentID, text)
	got := p.WaitTask(run.ID, 60*time.Second, meshtest.StatusIs(mesh.StatusCompleted, mesh.StatusFailed))
	if got.Status != mesh.StatusCompleted {
		m.d.t.Fatalf("task %q ended %s: %+v", text, got.Status, got.Error)
	}
}

// readiness is a process's /readyz answer.
type readiness struct {
	Ready              bool              `json:"ready"`
	Checks             map[string]string `json:"checks"`
	UnreachableRegions []string          `json:"unreachable_regions"`
	WaitingFor         string            `json:"waiting_for"`
}

// probeReady asks /readyz at addr as the Helm chart's readiness probe
// does (GET, a 3 s timeout) and returns the status and the answer; status
// 0 when it got none.
func probeReady(addr string) (int, readiness) {
	client := http.Client{Timeout: 3 * time.Second}
	var r readiness
	resp, err := client.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, r
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&r)
	return resp.StatusCode, r
}

// waitReadyNaming waits until every process of the region, and its
// gateway's API address, answers /readyz with 200 and names exactly the
// regions of unreachable (sorted) in unreachable_regions.
func (r *region) waitReadyNaming(t *testing.T, unreachable ...string) {
	t.Helper()
	addrs := map[string]string{"the gateway's API": strings.TrimPrefix(r.api, "http://")}
	for svc, addr := range r.health {
		addrs[svc] = addr
	}
	for name, addr := range addrs {
		var status int
		var got readiness
		meshtest.Eventually(t, 30*time.Second, func() bool {
			status, got = probeReady(addr)
			return status == http.StatusOK && slices.Equal(got.UnreachableRegions, unreachable)
		}, func() string {
			return fmt.Sprintf("%s in %s: /readyz %d %+v; want 200 naming exactly %v unreachable", name, r.name, status, got, unreachable)
		})
	}
}
