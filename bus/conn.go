package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"
)

// ConnConfig says how to reach NATS.
type ConnConfig struct {
	// Server, when set, connects in-process to this embedded server (no
	// socket): an *embedded.Server.
	Server nats.InProcessConnProvider
	// URL is one or more comma-separated nats:// or ws:// URLs, used when Server is nil.
	URL string
	// User and Password authenticate a platform service on an external server.
	User     string
	Password string
	// Nkey authenticates a platform service with a user nkey (the embedded server).
	Nkey nkeys.KeyPair
	// Token authenticates a runtime or consumer credential through the auth callout.
	Token string
	// InboxPrefix replaces _INBOX for replies; runtimes may only subscribe to their own.
	InboxPrefix string
	// Name identifies the connection in server monitoring.
	Name string
	// MaxReconnectWait caps the backoff between reconnect attempts. Default 2s.
	MaxReconnectWait time.Duration
	// FailWhileDisconnected makes publishes and requests fail at once while
	// the connection is down, instead of waiting in a buffer until it is
	// back or their deadline passes. Runtimes set it: they retry on their
	// own schedule and must move an undelivered report to their durable
	// outbox without first holding it in memory for a whole request timeout.
	FailWhileDisconnected bool
	// RetryRefusedAuth keeps reconnecting after the server refused the
	// credential twice in a row, where NATS would otherwise close the
	// connection for good: an auth service that is still starting refuses
	// valid credentials too. The caller then finds out by other means
	// whether its credential was revoked.
	RetryRefusedAuth bool
	// OnAuthRefused is called when the server refuses the credential (on a
	// reconnect, e.g. after the platform closed a revoked credential's
	// connection), so the caller can find out at once whether it was revoked.
	OnAuthRefused func()
	// OnReconnect is called when the connection is back, on the same
	// server or another.
	OnReconnect func()
	// WaitForServer keeps trying to reach a server that cannot be reached
	// yet (not started, or still starting) until ctx ends, with one log
	// line, instead of failing at once: platform services started before
	// their NATS. A refused credential still fails at once.
	WaitForServer bool
	// InOrder tries URL's servers in the order given, at the first
	// connection and at every reconnection, instead of in random order: a
	// runtime lists its home region's servers first, other regions' after,
	// as pairing told it. The servers the connected cluster tells of are
	// kept, after all the given ones, so a runtime given one server of its
	// region still reconnects when that server goes; it tries the next
	// region's given servers before them, so a region should advertise
	// every one of its servers to keep its runtimes.
	InOrder bool
	// Logger receives connection state changes.
	Logger zerolog.Logger
}

// Conn is a NATS connection with its JetStream context.
type Conn struct {
	NC *nats.Conn
	JS jetstream.JetStream
}

// handshakeTimeout bounds one connection's handshake with a server (a
// server that does not answer at all costs this much per try): a little
// more than the server may take to admit it (AuthTimeout).
const handshakeTimeout = AuthTimeout + 2*time.Second

// Connect opens a connection that reconnects forever with jittered backoff.
func Connect(ctx context.Context, cfg ConnConfig) (*Conn, error) {
	if cfg.Server == nil && cfg.URL == "" {
		return nil, errors.New("bus: either Server or URL is required")
	}
	maxWait := cfg.MaxReconnectWait
	if maxWait == 0 {
		maxWait = 2 * time.Second
	}
	log := cfg.Logger
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(false),
		nats.CustomReconnectDelay(reconnectBackoff(maxWait).Delay),
		nats.PingInterval(20 * time.Second),
		// The handshake waits for the server's answer to CONNECT, which for
		// a runtime or consumer includes the auth callout's round trip:
		// when a few thousand runtimes connect at once (a platform
		// restart) that takes longer than the client's default of 2 s.
		nats.Timeout(handshakeTimeout),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn().Err(err).Msg("nats disconnected")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info().Str("server", nc.ConnectedUrlRedacted()).Str("cluster", nc.ConnectedClusterName()).Msg("nats reconnected")
			if cfg.OnReconnect != nil {
				cfg.OnReconnect()
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrAuthorization) && cfg.OnAuthRefused != nil {
				cfg.OnAuthRefused()
			}
			ev := log.Warn().Err(err)
			if sub != nil {
				ev = ev.Str("subject", sub.Subject)
			}
			ev.Msg("nats async error")
		}),
	}
	if cfg.Server != nil {
		opts = append(opts, nats.InProcessServer(cfg.Server))
	}
	if cfg.User != "" {
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password))
	}
	if cfg.Nkey != nil {
		pub, err := cfg.Nkey.PublicKey()
		if err != nil {
			return nil, fmt.Errorf("bus: service nkey: %w", err)
		}
		opts = append(opts, nats.Nkey(pub, cfg.Nkey.Sign))
	}
	if cfg.Token != "" {
		opts = append(opts, nats.Token(cfg.Token))
	}
	if cfg.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(cfg.InboxPrefix))
	}
	if cfg.FailWhileDisconnected {
		opts = append(opts, nats.ReconnectBufSize(-1))
	}
	if cfg.RetryRefusedAuth {
		opts = append(opts, nats.IgnoreAuthErrorAbort())
	}
	if cfg.InOrder {
		opts = append(opts, nats.DontRandomize())
	}
	url := cfg.URL
	if cfg.Server != nil {
		url = ""
	}
	nc, err := dial(ctx, url, opts, cfg.WaitForServer, reconnectBackoff(maxWait), log)
	if err != nil {
		return nil, fmt.Errorf("bus: connect: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	return &Conn{NC: nc, JS: js}, nil
}

// dial connects, and with wait retries while no server can be reached.
//
// It retries itself rather than leave it to nats.RetryOnFailedConnect: with
// that option nats.Connect returns no error for any failed first
// connection, handing back a connection still trying in the background, so
// a credential the server refused would not fail Connect at once (it must:
// WaitForServer), the wait would not end with ctx, and Connect would
// return before the caller can use the bus.
func dial(ctx context.Context, url string, opts []nats.Option, wait bool, b *Backoff, log zerolog.Logger) (*nats.Conn, error) {
	for attempt := 0; ; attempt++ {
		nc, err := nats.Connect(url, opts...)
		if err == nil || !wait || !errors.Is(err, nats.ErrNoServers) {
			return nc, err
		}
		if attempt == 0 {
			log.Warn().Err(err).Msg("waiting for NATS")
		}
		if cerr := b.Sleep(ctx); cerr != nil {
			return nil, fmt.Errorf("%w (gave up waiting: %w)", err, cerr)
		}
	}
}

// Drain stops subscriptions, lets in-flight messages finish, flushes and closes.
func (c *Conn) Drain(timeout time.Duration) {
	if c == nil || c.NC == nil || c.NC.IsClosed() {
		return
	}
	defer forgetOrigin(c.NC)
	defer forgetReach(c.NC)
	defer searchLimits.Delete(c.NC)
	done := make(chan struct{})
	c.NC.SetClosedHandler(func(*nats.Conn) { close(done) })
	if err := c.NC.Drain(); err != nil {
		c.NC.Close()
		return
	}
	select {
	case <-done:
	case <-time.After(timeout):
		c.NC.Close()
	}
}

// reconnectBackoff spaces reconnections: a delay d that doubles from 50ms
// up to max, each wait drawn from [d/2, d] so that max stays the longest
// one and many runtimes do not reconnect in lockstep after a platform
// restart. A Backoff centred on three quarters of d and spread by a third
// of that draws exactly this range.
func reconnectBackoff(max time.Duration) *Backoff {
	return &Backoff{Initial: 50 * time.Millisecond * 3 / 4, Max: max * 3 / 4, Jitter: 1.0 / 3}
}
