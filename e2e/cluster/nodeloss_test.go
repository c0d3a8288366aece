package cluster

import (
	"fmt"
	"testing"
	"time"
)

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
