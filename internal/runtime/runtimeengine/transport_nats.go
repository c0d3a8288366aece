package runtimeengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// NATSConfig configures the NATS transport.
type NATSConfig struct {
	// URL is one or more comma-separated nats:// or ws:// URLs, tried in
	// the order given, at the first connection and at every reconnection:
	// the servers of the agent's home region first, then other regions'.
	URL       string
	Token     string
	AgentID   string
	RuntimeID string
	// Regions are the names of the platform's regions the runtime knows of
	// (its home region and fallbacks): a server in a cluster of one of
	// these names is in that region.
	Regions []string
	// HomeRegion is the agent's home region, and HomeURLs its servers
	// among URL's (comma-separated). While connected to another region,
	// the transport checks every HomeCheck whether one of them takes
	// connections again, and then reconnects, which tries them first: a
	// runtime that moved away during its region's outage comes back.
	// Empty: no such check.
	HomeRegion string
	HomeURLs   string
	// HomeCheck is how often that is checked. Default 30s.
	HomeCheck time.Duration
	// InboxPrefix is the runtime's private reply inbox (its NATS permissions
	// allow no other).
	InboxPrefix string
	// ClaimWait is how long one offer request waits for a pending run.
	// Default 25s.
	ClaimWait time.Duration
	// ConnectTimeout bounds the first connection. Default 5s.
	ConnectTimeout time.Duration
	Logger         zerolog.Logger
}

// Validate checks the configuration before anything connects: the ids
// and URL a runtime's subjects and connection need, and durations that are
// not negative (0 takes the default). The error names the field.
func (c NATSConfig) Validate() error {
	var errs []error
	for _, f := range []struct{ name, v string }{{"URL", c.URL}, {"AgentID", c.AgentID}, {"RuntimeID", c.RuntimeID}} {
		if strings.TrimSpace(f.v) == "" {
			errs = append(errs, fmt.Errorf("NATSConfig.%s is required", f.name))
		}
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"ClaimWait", c.ClaimWait}, {"ConnectTimeout", c.ConnectTimeout}, {"HomeCheck", c.HomeCheck}} {
		if f.d < 0 {
			errs = append(errs, fmt.Errorf("NATSConfig.%s is %s: must not be negative (0 takes the default)", f.name, f.d))
		}
	}
	return errors.Join(errs...)
}

type natsTransport struct {
	operations
	cfg   NATSConfig
	conn  *bus.Conn
	rc    *meshapi.RuntimeClient
	hello *meshapi.HelloResponse
	// authRefused is signalled when the server refuses the credential on a
	// reconnect: a waiting offer ends at once, so the runtime asks about its
	// credential now (the platform closes a revoked runtime's connection).
	authRefused chan struct{}
	// stop ends the return to the home region (returnHome); closeOnce
	// makes a second Close do nothing.
	stop      chan struct{}
	closeOnce sync.Once
	// reconnected is closed (and replaced) when the connection is back:
	// a waiting offer request ends, and the runtime asks again where it
	// is now, rather than wait on a task queue copy it may have lost.
	reconnMu    sync.Mutex
	reconnected chan struct{}
	// disconnected is closed (and replaced) when the connection drops: an
	// artifact write in flight then ends at once (its answer, if any, is
	// lost with the connection) rather than wait out its timeout.
	disconnected chan struct{}
	// instructions are those the last claim brought (nil: none did).
	instructions atomic.Pointer[string]
	// lost are the claiming requests whose answers did not come (see
	// NextUpTo).
	lost lostClaims
}

// Artifacts is the transport itself: artifacts go to the artifacts
// service in chunks on the runtime's own subjects (Write).
func (t *natsTransport) Artifacts() ArtifactWriter { return t }

func (t *natsTransport) ClaimedInstructions(string) (string, bool) {
	if p := t.instructions.Load(); p != nil {
		return *p, true
	}
	return "", false
}

// onReconnect ends the offer requests that wait.
func (t *natsTransport) onReconnect() {
	t.reconnMu.Lock()
	close(t.reconnected)
	t.reconnected = make(chan struct{})
	t.reconnMu.Unlock()
}

// onDisconnect ends the artifact writes in flight.
func (t *natsTransport) onDisconnect() {
	t.reconnMu.Lock()
	close(t.disconnected)
	t.disconnected = make(chan struct{})
	t.reconnMu.Unlock()
}

func (t *natsTransport) disconnects() <-chan struct{} {
	t.reconnMu.Lock()
	defer t.reconnMu.Unlock()
	return t.disconnected
}

func (t *natsTransport) reconnects() <-chan struct{} {
	t.reconnMu.Lock()
	defer t.reconnMu.Unlock()
	return t.reconnected
}

// errAuthRefused ends an offer request whose connection's credential was refused.
var errAuthRefused = errors.New("the NATS server refused this runtime's credential")

// DialNATS connects to the platform's NATS with the runtime credential and
// says hello. The NATS server admits the connection
// only with a valid credential and confines it to this agent's subjects.
func DialNATS(ctx context.Context, cfg NATSConfig) (Transport, *meshapi.HelloResponse, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if cfg.ClaimWait == 0 {
		cfg.ClaimWait = 25 * time.Second
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	if cfg.HomeCheck == 0 {
		cfg.HomeCheck = 30 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	authRefused := make(chan struct{}, 1)
	t := &natsTransport{cfg: cfg, authRefused: authRefused, stop: make(chan struct{}), reconnected: make(chan struct{}), disconnected: make(chan struct{})}
	t.lost = lostClaims{log: cfg.Logger, via: t}
	conn, err := bus.Connect(cctx, bus.ConnConfig{
		OnReconnect: t.onReconnect,
		OnAuthRefused: func() {
			select {
			case authRefused <- struct{}{}:
			default:
			}
		},
		URL: cfg.URL, InOrder: true, Token: cfg.Token, InboxPrefix: cfg.InboxPrefix,
		Name: "a2a-runtime " + cfg.RuntimeID, MaxReconnectWait: 5 * time.Second,
		FailWhileDisconnected: true, RetryRefusedAuth: true, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", cfg.URL, err)
	}
	t.conn = conn
	logDisconnect := conn.NC.Opts.DisconnectedErrCB
	conn.NC.SetDisconnectErrHandler(func(nc *nats.Conn, err error) {
		if logDisconnect != nil {
			logDisconnect(nc, err)
		}
		t.onDisconnect()
	})
	t.rc = meshapi.NewClient(conn.NC).Runtime(cfg.AgentID, cfg.RuntimeID)
	t.operations = operations{t.rc}
	if t.hello, err = t.helloWhenAnswered(cctx); err != nil {
		err = t.explain(err, "the runtime's hello")
		conn.NC.Close()
		return nil, nil, err
	}
	if cfg.HomeRegion != "" && cfg.HomeURLs != "" {
		go t.returnHome()
	}
	t.lost.sweep(t.stop)
	return t, t.hello, nil
}

// returnHome reconnects, while the connection is in another region than
// the home region, once a home server takes connections again. A
// reconnection takes the next server of the connection's list, which may
// be another region's, so it reconnects again, at most once per server
// known, until it lands in the home region.
func (t *natsTransport) returnHome() {
	tick := time.NewTicker(t.cfg.HomeCheck)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		nc := t.conn.NC
		if !nc.IsConnected() || t.Connection().Region == t.cfg.HomeRegion || !anyReachable(t.cfg.HomeURLs) {
			continue
		}
		t.cfg.Logger.Info().Str("home_region", t.cfg.HomeRegion).Str("url", nc.ConnectedUrlRedacted()).
			Msg("the home region's servers take connections again; reconnecting to them")
		for range len(nc.Servers()) {
			if !t.reconnect() || t.Connection().Region == t.cfg.HomeRegion {
				break
			}
		}
	}
}

// reconnect makes the connection reconnect and waits until it has, for up
// to ten seconds; false when it did not (or the transport is closing).
func (t *natsTransport) reconnect() bool {
	nc := t.conn.NC
	before := nc.Stats().Reconnects
	if err := nc.ForceReconnect(); err != nil {
		t.cfg.Logger.Warn().Err(err).Msg("reconnect to the home region")
		return false
	}
	deadline := time.After(10 * time.Second)
	for {
		if nc.IsConnected() && nc.Stats().Reconnects > before {
			return true
		}
		select {
		case <-t.stop:
			return false
		case <-deadline:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// anyReachable reports whether one of the comma-separated URLs' servers
// answers: a NATS server greets a new connection with its INFO at once (a
// WebSocket server only after an upgrade, so for ws:// a TCP connection
// is taken as an answer).
func anyReachable(urls string) bool {
	for _, raw := range strings.Split(urls, ",") {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Hostname() == "" {
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"ws": "80", "wss": "443"}[u.Scheme]
			if port == "" {
				port = "4222"
			}
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort(u.Hostname(), port), 2*time.Second)
		if err != nil {
			continue
		}
		ok := u.Scheme == "ws" || u.Scheme == "wss"
		if !ok {
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			greeting := make([]byte, 4)
			_, err := io.ReadFull(c, greeting)
			ok = err == nil && string(greeting) == "INFO"
		}
		_ = c.Close()
		if ok {
			return true
		}
	}
	return false
}

// helloWhenAnswered says hello once the platform answers through the server: a leaf
// node that has just started, or just reconnected to its hub, learns what
// the hub answers a moment later, so "no responders" is asked again until
// ctx ends.
func (t *natsTransport) helloWhenAnswered(ctx context.Context) (*meshapi.HelloResponse, error) {
	for {
		hello, err := t.rc.Hello(ctx)
		if !errors.Is(err, nats.ErrNoResponders) {
			return hello, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (t *natsTransport) Name() string { return ModeNATS }

func (t *natsTransport) Connection() profile.Connection {
	nc := t.conn.NC
	c := profile.Connection{Transport: ModeNATS, Server: nc.ConnectedUrlRedacted(), Cluster: nc.ConnectedClusterName(), At: time.Now()}
	// Each region is a NATS cluster of that name, and a server in no
	// cluster is the one region of its deployment (bus.ResolveRegion); any
	// other cluster (a site's leaf node has one of its own) is none of the
	// platform's.
	region := c.Cluster
	if region == "" {
		region = bus.DefaultRegion
	}
	if slices.Contains(t.cfg.Regions, region) {
		c.Region = region
	}
	return c
}

// ErrNoPlatform means the runtime reached a NATS server but the platform
// does not answer it through that server: a site's leaf node whose
// connection to the platform is down or refused, or one that does not carry
// the runtimes' account.
var ErrNoPlatform = errors.New("the platform does not answer through this NATS server")

// server names the NATS server the transport is connected to, for errors.
func (t *natsTransport) server() string {
	nc := t.conn.NC
	where := nc.ConnectedUrlRedacted()
	if name := nc.ConnectedServerName(); name != "" {
		where = fmt.Sprintf("%q at %s", name, where)
	}
	if cluster := nc.ConnectedClusterName(); cluster != "" {
		return where + " (cluster " + cluster + ")"
	}
	return where + " (in no cluster)"
}

// explain turns a request nothing answered into ErrNoPlatform, saying
// what went unanswered and where.
func (t *natsTransport) explain(err error, what string) error {
	if !errors.Is(err, nats.ErrNoResponders) {
		return err
	}
	return fmt.Errorf("%w: the NATS server %s took the connection, but nothing answers %s there; "+
		"if it is a site's leaf node, its connection to the platform is down or was refused (see the leaf node's log)", ErrNoPlatform, t.server(), what)
}

// Canceled delivers nothing: over NATS the runtime hears of cancels by
// asking (WaitCanceled), so that nothing but the answers to its own
// requests ever reaches it.

// WaitCanceled waits for any of the runs the runtime holds to be canceled,
// up to the transport's claim wait, and names those that were.
func (t *natsTransport) WaitCanceled(ctx context.Context, ids []string) ([]string, error) {
	rctx, cancel := context.WithTimeout(ctx, t.cfg.ClaimWait+offerSlack)
	defer cancel()
	res, err := t.rc.Canceled(rctx, meshapi.CanceledRequest{TaskRunIDs: ids, Wait: t.cfg.ClaimWait})
	if err != nil {
		return nil, t.explain(err, "the runtime's wait for canceled runs")
	}
	return res.Canceled, nil
}

func (t *natsTransport) Goodbye(ctx context.Context) error {
	return t.explain(t.operations.Goodbye(ctx), "the runtime's goodbye")
}

// Heartbeat names the requests whose lost answers it no longer asks about
// (see lostClaims.withAbandoned).
func (t *natsTransport) Heartbeat(ctx context.Context, req meshapi.HeartbeatRequest) error {
	return t.explain(t.operations.Heartbeat(ctx, t.lost.withAbandoned(req)), "the runtime's heartbeat")
}

// offerSlack is how much longer than its wait an offer request is given
// for its answer.
const offerSlack = 5 * time.Second

func (t *natsTransport) NextUpTo(ctx context.Context, n int) ([]*mesh.TaskRun, error) {
	n = min(max(n, 1), meshapi.MaxOffers)
	// Runs claimed by a request whose answer was lost come first.
	if runs := t.lost.takeUp(ctx, n); len(runs) > 0 {
		return runs, nil
	}
	wait := t.lost.waitFor(t.cfg.ClaimWait)
	wctx, cancel := context.WithTimeout(ctx, wait+offerSlack)
	defer cancel()
	refused := make(chan struct{})
	stopWatch := make(chan struct{})
	defer close(stopWatch)
	reconnected := t.reconnects()
	go func() {
		select {
		case <-t.authRefused:
			close(refused)
			cancel()
		case <-reconnected:
			cancel()
		case <-stopWatch:
		}
	}()
	// The task queue claims the runs pending now for this request, or
	// names those that arrive while it waits, or answers empty when the
	// wait ends. No answer at all (the copy holding the request stopped
	// with its node), or a reconnect meanwhile, only means asking again,
	// after asking for what the request may have claimed.
	key, sent := mesh.NewID(), time.Now()
	res, err := t.rc.Offer(wctx, meshapi.OfferRequest{Wait: wait, Max: n, Claim: true, Key: key})
	if err != nil && mayHaveClaimed(err) {
		t.lost.add(key, sent)
	} else if err == nil && len(res.Claimed) > 0 {
		// Held now, even by a runtime that is stopping: it releases them.
		return t.held(res.Claimed, res.Instructions), nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	select {
	case <-refused:
		return nil, errAuthRefused
	default:
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, nats.ErrTimeout) {
		return nil, fmt.Errorf("ask for work: %w", err)
	}
	if res == nil || len(res.Offers) == 0 {
		return nil, nil
	}
	return t.claim(ctx, res.Offers)
}

// askLost asks for the runs claimed under key by a request whose answer
// did not come (see lostClaims).
func (t *natsTransport) askLost(ctx context.Context, key string) ([]*mesh.TaskRun, error) {
	res, err := t.rc.Offer(ctx, meshapi.OfferRequest{Recover: true, Key: key})
	if err != nil {
		return nil, err
	}
	return t.held(res.Claimed, res.Instructions), nil
}

// held returns the runs a claim answered with, and keeps the instructions
// it brought.
func (t *natsTransport) held(claimed []mesh.TaskRun, instructions *string) []*mesh.TaskRun {
	if len(claimed) > 0 && instructions != nil {
		t.instructions.Store(instructions)
	}
	runs := make([]*mesh.TaskRun, len(claimed))
	for i := range claimed {
		runs[i] = &claimed[i]
	}
	return runs
}

// claim claims the offered runs in one request; a run another took, or
// that ended meanwhile, is left out.
func (t *natsTransport) claim(ctx context.Context, offers []meshapi.Offer) ([]*mesh.TaskRun, error) {
	// The claim must not be abandoned half-way by a drain: claimed runs are
	// then released properly by the caller.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	claims := make([]meshapi.ClaimRequest, len(offers))
	for i, o := range offers {
		claims[i] = meshapi.ClaimRequest{TaskRunID: o.TaskRunID, Attempt: o.Attempt}
	}
	key, sent := mesh.NewID(), time.Now()
	res, err := t.rc.ClaimMany(cctx, meshapi.ClaimManyRequest{Claims: claims, Key: key})
	if err != nil {
		if mayHaveClaimed(err) {
			t.lost.add(key, sent)
		}
		return nil, err
	}
	return t.held(res.Claimed, res.Instructions), nil
}

func (t *natsTransport) Renew(ctx context.Context, ids []string) ([]string, error) {
	res, err := t.rc.Renew(ctx, meshapi.RenewRequest{TaskRunIDs: ids})
	if err != nil {
		return nil, err
	}
	return res.Lost, nil
}

func (t *natsTransport) Close() {
	t.closeOnce.Do(func() {
		close(t.stop)
		// Runs claimed for answers that never came are given back at
		// once, not when their leases end.
		t.lost.giveBackAll()
		t.conn.Drain(2 * time.Second)
	})
}
