package mesh

import "time"

// Defaults of the platform that more than one component applies: each is
// written here once, and the services, the platform's configuration and the
// programs' flags all take it from here.
const (
	// DefaultLease is how long a claimed run stays held without a renewal:
	// a runtime renews at a third of it, so two renewals may be lost in a
	// row (the task queue and the delegation service hold runs this long;
	// runtimes are told it at attach).
	DefaultLease = 60 * time.Second
	// DefaultHeartbeatTimeout is how long a runtime stays online without a
	// heartbeat (seed 001 §4.2): the registry marks it offline after it,
	// and runtimes are told it at attach and hello.
	DefaultHeartbeatTimeout = 120 * time.Second
	// DefaultBlockingWait is how long a blocking send (A2A message/send,
	// the partner routes, the envelope protocol's execute) waits for its
	// task to end before answering with the task as it is.
	DefaultBlockingWait = 60 * time.Second
	// DefaultAPIAddr is where the platform's HTTP API listens unless told
	// otherwise, and so where its clients look first (seed 000's local API
	// base).
	DefaultAPIAddr = "127.0.0.1:3000"
)
