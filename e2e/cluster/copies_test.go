package cluster

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"
)

// loadRuns is how many runs a load creates: A2A_CLUSTER_RUNS overrides it.
func loadRuns(t *testing.T, def int) int {
	if s := os.Getenv("A2A_CLUSTER_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("A2A_CLUSTER_RUNS=%q", s)
		}
		return n
	}
	return def
}

const (
	loadAgents  = 4
	loadWorkers = 16
)

// TestCluster_TwoCopiesOfEveryService_EachRunEndsWithItsAdaptersOutcome:
// with two copies of every service on different nodes, every run of a load
// through both gateways ends the way its adapter answered (completed with
// its reply, or failed with its message), with exactly one creation and
// one terminal event on the event stream, and none stays pending while its
// runtime is online.
func TestCluster_TwoCopiesOfEveryService_EachRunEndsWithItsAdaptersOutcome(t *testing.T) {
	d := up(t)
	var agents []*agent
	for i := range loadAgents {
		agents = append(agents, d.connectAgent(fmt.Sprintf("agent %d", i), d.startAdapter(agentScript), d.nodes[i%len(d.nodes)].URL()))
	}
	w := d.watch(d.connect(), agents)
	start := time.Now()
	res := d.createLoad(agents, loadRuns(t, 1000), loadWorkers, nil)
	if len(res.refused) > 0 {
		t.Fatalf("%d creations were refused:\n%v", len(res.refused), first(res.refused, 20))
	}
	created := time.Since(start)
	d.waitEnded(t, res, w, 90*time.Second)
	t.Logf("%d runs created in %s, all ended in %s", len(res.runs), created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	d.checkOutcomes(t, res, w)
}

// TestCluster_MetaLeaderLostMidLoad_NoRunLostOrWrong kills the JetStream
// meta leader (SIGKILL) a third of the way through a load; see
// nodeLostMidLoad.
func TestCluster_MetaLeaderLostMidLoad_NoRunLostOrWrong(t *testing.T) {
	nodeLostMidLoad(t, "meta leader")
}

// TestCluster_RuntimesNodeLostMidLoad_NoRunLostOrWrong kills the node the
// runtimes are connected to (not the meta leader) a third of the way
// through a load; see nodeLostMidLoad.
func TestCluster_RuntimesNodeLostMidLoad_NoRunLostOrWrong(t *testing.T) {
	nodeLostMidLoad(t, "runtimes' node")
}

// nodeLostMidLoad kills a node (the victim) a third of the way through a
// load. Every creation is stored or answered 503 (and then stored when
// retried with its idempotency key), and every run still ends with its
// adapter's outcome and exactly one terminal event.
func nodeLostMidLoad(t *testing.T, victim string) {
	d := up(t)
	leader := d.metaLeader()
	// The runtimes are on a node that is not the meta leader, so
	// the two cases lose different nodes.
	rtNode := (leader + 1) % len(d.nodes)
	kill := leader
	if victim == "runtimes' node" {
		kill = rtNode
	}
	var agents []*agent
	for i := range loadAgents {
		agents = append(agents, d.connectAgent(fmt.Sprintf("agent %d", i), d.startAdapter(agentScript), d.nodes[rtNode].URL()))
	}
	w := d.watch(d.connect(), agents)
	n := loadRuns(t, 600)
	killed := make(chan struct{})
	start := time.Now()
	res := d.createLoad(agents, n, loadWorkers, func(created int64) {
		if created == int64(n/3) {
			t.Logf("killing %s (%s, the %s) after %d runs created", d.nodes[kill].name, d.nodes[kill].client, victim, created)
			d.kill(kill)
			close(killed)
		}
	})
	select {
	case <-killed:
	default:
		t.Fatal("the load ended before the node was killed")
	}
	if len(res.refused) > 0 {
		t.Fatalf("%d creations were refused:\n%v", len(res.refused), first(res.refused, 20))
	}
	d.waitEnded(t, res, w, 90*time.Second)
	t.Logf("%d runs ended in %s", len(res.runs), time.Since(start).Round(time.Millisecond))
	d.checkOutcomes(t, res, w)
}

// TestCluster_AllServicesStartedAtOnceOnAFreshCluster: every copy of every
// service started at the same moment as a cluster that has not formed yet
// comes up, and answers /readyz with 200, as do both gateways.
func TestCluster_AllServicesStartedAtOnceOnAFreshCluster(t *testing.T) {
	d := startNodes(t)
	copies := d.startServices()
	d.waitReady(copies, 90*time.Second)
	for _, gw := range d.gateways {
		resp, err := http.Get(gw + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("gateway %s /readyz: %d", gw, resp.StatusCode)
		}
	}
	for _, c := range copies {
		if c.exited() {
			t.Fatalf("%s exited", c.name)
		}
	}
}
