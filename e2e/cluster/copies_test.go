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
		if c.Exited() {
			t.Fatalf("%s exited", c.Name)
		}
	}
}
