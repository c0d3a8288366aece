// Package e2e is the end-to-end suite of the runtime: it builds a2a-platform,
// a2a-runtime and a2a-adapter once, runs them as real processes with their
// own homes, data dirs and loopback ports, and checks the acceptance list of
// seed 001 §9 and the local adapter contract of seed 000 from the outside:
// through the platform's HTTP API, the files the runtime writes, the
// processes' output and /proc.
//
// Run it with: go test -race -count=1 ./e2e/
package e2e
