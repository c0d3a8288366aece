// Package runfollow follows task runs on an event stream: the events of
// one run or several, with or without their artifacts, or of any subject
// filter, in stream order, from a position a reader can send back later to
// resume (an SSE Last-Event-ID).
//
// A follower keeps no state on the server. It reads the stream with direct
// gets, which any replica of the stream answers without the JetStream meta
// group, and it creates no consumer, which needs that group's quorum: a
// region cut off from the rest of a supercluster keeps streaming its runs.
// A core NATS subscription on the followed subjects only wakes the follower
// to read again, so a core message that is lost, or arrives before the
// stream has stored its copy, costs a later read and loses nothing.
package runfollow

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus"
)

// Config says which stream a Source reads and how. Zero values take the
// documented defaults.
type Config struct {
	// Stream is the event stream to read. Required: each region may keep
	// its own (bus.EventStream is the platform's).
	Stream string
	// Batch is the most events one read returns. Default 256.
	Batch int
	// Poll is how often an idle follower reads the stream although nothing
	// woke it, in case a wake-up was lost (a slow consumer, a reconnect).
	// Default 5s.
	Poll time.Duration
	// ReadTimeout bounds one read. Default 5s.
	ReadTimeout time.Duration
}

const (
	defaultBatch       = 256
	defaultPoll        = 5 * time.Second
	defaultReadTimeout = 5 * time.Second
	// maxReadBytes bounds the bytes of one read's answer, so one read of a
	// run with large events does not fill the connection's buffers.
	maxReadBytes = 4 << 20
)

// retries are when a follower reads again after a wake-up for an event it
// could not read yet: the replica that answered had not stored it yet (the
// core message often arrives while the stream is storing it, so the first
// retries come soon), or its publish failed and it never will be stored.
// After the last one it stops looking.
var retries = []time.Duration{
	0, 0, 0, time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 10 * time.Millisecond,
	40 * time.Millisecond, 160 * time.Millisecond, 640 * time.Millisecond, 1280 * time.Millisecond,
}

// Source is an event stream followers read.
type Source struct {
	nc        *nats.Conn
	cfg       Config
	directGet string
	// reads counts the direct gets made, for tests and benchmarks.
	reads atomic.Uint64
	// clock stamps when reads are sent and when followers need them, so a
	// follower takes part only in reads sent after it needed one.
	clock atomic.Uint64
	// wakes are the followers' core subscriptions.
	wakes wakes

	// The answers to every follower's reads come to one subscription.
	muxOnce sync.Once
	muxErr  error
	inbox   string
	mu      sync.Mutex
	calls   map[string]*dget
	lastID  uint64
}

// NewSource returns a source reading cfg.Stream over conn.
func NewSource(conn *bus.Conn, cfg Config) *Source {
	if cfg.Batch <= 0 {
		cfg.Batch = defaultBatch
	}
	if cfg.Poll <= 0 {
		cfg.Poll = defaultPoll
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = defaultReadTimeout
	}
	s := &Source{nc: conn.NC, cfg: cfg, directGet: bus.APIPrefix(conn.JS) + "DIRECT.GET." + cfg.Stream}
	s.wakes = wakes{src: s}
	return s
}

// stamp is a stamp later than every stamp taken before.
func (s *Source) stamp() uint64 { return s.clock.Add(1) }

// Stream is the name of the stream s reads.
func (s *Source) Stream() string { return s.cfg.Stream }
