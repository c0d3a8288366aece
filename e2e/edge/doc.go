// Package edge tests how runtimes and sites reach a platform deployed across
// regions: a NATS supercluster (clustertest), each region running every
// service as `a2a-platform serve` processes, runtimes as `a2a-runtime`
// processes, and sites' leaf nodes from deploy/nats/leaf.conf as shipped.
package edge
