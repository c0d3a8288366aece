// Package cluster tests the platform as operators run it on a NATS cluster:
// three nats-server nodes with deploy/nats/cluster.conf as shipped, two
// copies of every service as `a2a-platform serve` processes on different
// nodes, and agents behind real a2a-runtime and a2a-adapter processes. It
// counts every run's outcome and terminal events under load, with a node
// lost mid-load.
//
// Run it with: go test -race -count=1 ./e2e/cluster/
package cluster
