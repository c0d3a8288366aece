package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/freeport"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"
)

// clusterNodes is the size of the cluster phase's cluster: the smallest
// that keeps a quorum when a node is lost, as deploy/nats/cluster.conf runs.
const clusterNodes = 3

// ClusterReport is the task-run cycle and end to end on a three-node cluster
// with every stream, bucket and object store on three replicas, next to the
// same measurements on one node.
type ClusterReport struct {
	Nodes    int `json:"nodes"`
	Replicas int `json:"replicas"`
	// Agents of the cycle and of the multi-runtime end-to-end measurement.
	Agents int          `json:"agents"`
	Cycle  ClusterCycle `json:"cycle"`
	// E2E has one row per number of runtimes (1, then Agents).
	E2E []ClusterE2E `json:"end_to_end"`
	// Idle dispatch latency (one task at a time, one runtime) on one node
	// and on the cluster.
	SingleIdle  Summary `json:"single_node_idle_dispatch_latency"`
	ClusterIdle Summary `json:"cluster_idle_dispatch_latency"`
}

// ClusterCycle is the service cycle (create -> claim -> complete) on one
// node and on the cluster.
type ClusterCycle struct {
	SingleRunsPerSec  float64 `json:"single_node_runs_per_sec"`
	SingleClaim       Summary `json:"single_node_claim_latency"`
	ClusterRunsPerSec float64 `json:"cluster_runs_per_sec"`
	ClusterClaim      Summary `json:"cluster_claim_latency"`
	// Ratio is the cluster's runs/s over one node's.
	Ratio float64 `json:"cluster_to_single_ratio"`
}

// ClusterE2E is end to end with a number of runtimes on one node and on the
// cluster.
type ClusterE2E struct {
	Runtimes int       `json:"runtimes"`
	Single   E2EReport `json:"single_node"`
	Cluster  E2EReport `json:"cluster"`
	// Ratio is the cluster's runs/s over one node's.
	Ratio float64 `json:"cluster_to_single_ratio"`
}

// measureCluster measures the cycle and end to end on a cluster, and takes
// the single-node figures to compare them with from this run's cycle and
// e2e phases, measuring them first when those phases did not run.
func (r *Report) measureCluster(ctx context.Context, dir string, cfg Config) error {
	c := &ClusterReport{Nodes: clusterNodes, Replicas: clusterNodes, Agents: cfg.Agents}
	sizes := []int{1, cfg.Agents}
	if err := r.singleNodeFigures(ctx, filepath.Join(dir, "single"), sizes, cfg, c); err != nil {
		return err
	}
	cfg.Progress(fmt.Sprintf("cluster: starting %d nodes and every service with %d replicas", clusterNodes, clusterNodes))
	cl, err := startCluster(ctx, filepath.Join(dir, "cluster"), cfg)
	if err != nil {
		return fmt.Errorf("start cluster: %w", err)
	}
	defer cl.stop()
	cfg.Progress("cluster: cycle through the services")
	res, err := cycleOn(ctx, cl.target, cfg)
	if err != nil {
		return fmt.Errorf("cycle: %w", err)
	}
	c.Cycle.ClusterRunsPerSec, c.Cycle.ClusterClaim = res.rps, res.claim
	c.Cycle.Ratio = ratio(res.rps, c.Cycle.SingleRunsPerSec)
	for i, n := range sizes {
		cfg.Progress(fmt.Sprintf("cluster: end to end, %d runtime(s)", n))
		e, idle, err := e2eOn(ctx, cl.target, n, filepath.Join(dir, "cluster", fmt.Sprintf("work-%d", n)), cfg)
		if err != nil {
			return fmt.Errorf("end to end with %d runtimes: %w", n, err)
		}
		if n == 1 {
			c.ClusterIdle = idle
		}
		c.E2E[i].Cluster, c.E2E[i].Ratio = e, ratio(e.RunsPerSec, c.E2E[i].Single.RunsPerSec)
	}
	r.Cluster = c
	return nil
}

// singleNodeFigures fills c's single-node figures, from the report when
// the cycle and e2e phases measured them, or by measuring them now.
func (r *Report) singleNodeFigures(ctx context.Context, dir string, sizes []int, cfg Config, c *ClusterReport) error {
	if r.Cycle.ServiceRunsPerSec > 0 {
		c.Cycle.SingleRunsPerSec, c.Cycle.SingleClaim = r.Cycle.ServiceRunsPerSec, r.Cycle.ServiceClaim
	} else {
		cfg.Progress("cluster: cycle through the services on one node, to compare with")
		res, err := singleNodeCycle(ctx, filepath.Join(dir, "service"), cfg)
		if err != nil {
			return fmt.Errorf("single-node cycle: %w", err)
		}
		c.Cycle.SingleRunsPerSec, c.Cycle.SingleClaim = res.rps, res.claim
	}
	for _, n := range sizes {
		row := ClusterE2E{Runtimes: n}
		if i := slices.IndexFunc(r.E2E, func(e E2EReport) bool { return e.Runtimes == n }); i >= 0 {
			row.Single = r.E2E[i]
			if n == 1 {
				c.SingleIdle = r.Idle
			}
		} else {
			cfg.Progress(fmt.Sprintf("cluster: end to end on one node, %d runtime(s), to compare with", n))
			e, idle, err := singleNodeE2E(ctx, dir, n, cfg)
			if err != nil {
				return fmt.Errorf("single-node end to end with %d runtimes: %w", n, err)
			}
			row.Single = e
			if n == 1 {
				c.SingleIdle = idle
			}
		}
		c.E2E = append(c.E2E, row)
	}
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// benchCluster is a NATS cluster of in-process nodes configured as
// deploy/nats/cluster.conf configures its nodes (the platform's accounts,
// the auth callout, services by user and password, no cap on consumers),
// with every service running against it as `a2a-platform serve` runs it.
type benchCluster struct {
	nodes    []*embedded.Server
	services []*platform.Running
	// conn is a service connection the bench drives the platform with.
	conn   *bus.Conn
	target target
}

// startCluster starts the nodes, then the services spread over them: the
// gateway first (it provisions the streams, waiting for JetStream to elect
// its meta leader), then the others. Runtimes are told to connect to a node
// that does not lead the meta group, and the bench's own connection is on
// another node again, so requests cross routes as they do in production.
func startCluster(ctx context.Context, dir string, cfg Config) (cl *benchCluster, err error) {
	cl = &benchCluster{}
	defer func() {
		if err != nil {
			cl.stop()
		}
	}()
	user := bus.NATSUser{User: bus.DefaultServiceUser, Password: secret.NewToken("mesh")}
	issuerSeedFile, issuerPub, err := writeIssuerSeed(dir)
	if err != nil {
		return cl, err
	}
	if err := cl.startNodes(dir, bus.AccountsConfig{Services: user, AuthIssuer: issuerPub}.Render()); err != nil {
		return cl, err
	}
	serve := func(name string, node int, tune func(*platform.ServeConfig)) (*platform.Running, error) {
		sc := platform.ServeConfig{
			Config: platform.Config{
				DataDir: filepath.Join(dir, name), HTTPAddr: "127.0.0.1:0", Replicas: clusterNodes,
				ShutdownGrace: 2 * time.Second, Logger: zerolog.Nop(),
			},
			Service: name, NATSURL: cl.nodes[node].ClientURL(), NATSUser: user.User, NATSPassword: user.Password,
		}
		if tune != nil {
			tune(&sc)
		}
		s, err := platform.Serve(ctx, sc)
		if err != nil {
			return nil, fmt.Errorf("serve %s: %w", name, err)
		}
		cl.services = append(cl.services, s)
		return s, nil
	}
	gw, err := serve("gateway", 0, nil)
	if err != nil {
		return cl, err
	}
	rtNode, err := cl.followerNode(ctx)
	if err != nil {
		return cl, err
	}
	rtURL := cl.nodes[rtNode].ClientURL()
	for i, name := range platform.Services {
		if name == "gateway" {
			continue
		}
		_, err := serve(name, i%clusterNodes, func(sc *platform.ServeConfig) {
			sc.NATSAdvertise = rtURL
			sc.AuthIssuerSeedFile = issuerSeedFile
			sc.GatewayURL = "http://" + gw.HTTPAddr()
		})
		if err != nil {
			return cl, err
		}
	}
	cl.conn, err = bus.Connect(ctx, bus.ConnConfig{
		URL: cl.nodes[(rtNode+1)%clusterNodes].ClientURL(), User: user.User, Password: user.Password, Name: "a2a-platform bench",
	})
	if err != nil {
		return cl, err
	}
	cl.target = target{conn: cl.conn, natsURL: rtURL, httpAddr: gw.HTTPAddr()}
	return cl, nil
}

// startNodes starts the cluster's nodes, each with its own store and
// loopback ports, every one routed to all the others.
func (cl *benchCluster) startNodes(dir, accounts string) error {
	routes := make([]string, clusterNodes)
	listen := make([]string, clusterNodes)
	for i := range clusterNodes {
		addr, err := freeport.Addr()
		if err != nil {
			return err
		}
		listen[i], routes[i] = addr, "nats-route://"+addr
	}
	for i := range clusterNodes {
		client, err := freeport.Addr()
		if err != nil {
			return err
		}
		s, err := embedded.Start(embedded.Config{
			StoreDir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)), Listen: client, Accounts: accounts,
			ServerName: fmt.Sprintf("n%d", i+1), ClusterName: "a2a-mesh", ClusterListen: listen[i], Routes: routes,
			Logger: zerolog.Nop(),
		})
		if err != nil {
			return fmt.Errorf("node %d: %w", i+1, err)
		}
		cl.nodes = append(cl.nodes, s)
	}
	return nil
}

// followerNode returns a node that does not lead the JetStream meta group,
// once one of them does.
func (cl *benchCluster) followerNode(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if leader := slices.IndexFunc(cl.nodes, (*embedded.Server).MetaLeader); leader >= 0 {
			return (leader + 1) % len(cl.nodes), nil
		}
		select {
		case <-ctx.Done():
			return 0, errors.New("no JetStream meta leader elected")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (cl *benchCluster) stop() {
	if cl.conn != nil {
		cl.conn.Drain(time.Second)
	}
	for i := len(cl.services) - 1; i >= 0; i-- {
		cl.services[i].Stop()
	}
	for _, n := range cl.nodes {
		n.Shutdown()
	}
}

// writeIssuerSeed makes the account key that signs the auth callout's
// answers and writes its seed where the credential service reads it.
func writeIssuerSeed(dir string) (path, pub string, err error) {
	issuer, err := nkeys.CreateAccount()
	if err != nil {
		return "", "", err
	}
	seed, _ := issuer.Seed()
	pub, _ = issuer.PublicKey()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, "auth-issuer.nk")
	return path, pub, os.WriteFile(path, seed, 0o600)
}
