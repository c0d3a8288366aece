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
	// DefaultKeepAlive is how often a server-sent event stream with nothing
	// to say sends a comment, so proxies and clients keep it open (every
	// door's streams: the REST event streams, A2A, the partner routes).
	DefaultKeepAlive = 15 * time.Second
	// DefaultVersion is the version a component shows (agent cards,
	// status answers) when it is not told the platform's.
	DefaultVersion = "dev"
)

// Limits of request bodies and of bus messages. A body's content travels
// on the bus: the text and data of a message become a run's input, which a
// run record, an A2A task record and the run's events each carry whole in
// one NATS message; files go to the object store in chunks. Every door
// bounds its bodies by these, and the NATS servers (the embedded one and
// deploy/nats/*.conf) allow MaxBusPayload.
const (
	// MaxInputBytes bounds the input of one turn of a run (the JSON of a
	// message's text and data): a run record carries its input and an
	// output of the same bound in one NATS message of MaxBusPayload. It is
	// also the body limit of every door that takes no inline files (the
	// REST API, the envelope protocol, the partner routes).
	MaxInputBytes = 1 << 20
	// MaxFileBytes bounds one inline file part of an A2A message: it is
	// stored in the object store in chunks, never in a record.
	MaxFileBytes = 5 << 20
	// MaxBodyBytes bounds an A2A body of a caller with a credential: a
	// MaxFileBytes file as base64 (4/3 of it) beside a MaxInputBytes input,
	// with room for the JSON around them.
	MaxBodyBytes = 8 << 20
	// MaxAnonymousBodyBytes bounds a body of a caller without a credential
	// (of a public agent): anyone may send one, so it is a small fraction
	// of what a caller the owner let in may send.
	MaxAnonymousBodyBytes = 256 << 10
	// MaxBusPayload is the largest NATS message the platform needs: a run
	// record with a MaxInputBytes input and an output as large, beside its
	// metadata. NATS advises against messages much larger.
	MaxBusPayload = 4 << 20
	// LargeBodyBytes is the size from which a request body is large: a
	// process reads at most MaxLargeBodies of them at once (and at most
	// MaxAnonymousLargeBodies from callers without a credential), since
	// each costs a multiple of its size in memory while it is decoded,
	// stored and answered. A body of unknown length is large.
	LargeBodyBytes = 64 << 10
	// MaxLargeBodies is how many large bodies of callers with a credential
	// a gateway process handles at once; others wait LargeBodyWait for a
	// turn, then are refused with 429 and Retry-After.
	MaxLargeBodies = 4
	// MaxAnonymousLargeBodies is how many large bodies of callers without a
	// credential a gateway process handles at once.
	MaxAnonymousLargeBodies = 2
	// LargeBodyWait is how long a large body waits for a turn.
	LargeBodyWait = 2 * time.Second
)
