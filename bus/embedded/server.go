// Package embedded runs the NATS server with JetStream inside the platform
// process (`a2a-platform up`). It is apart from package bus so that the
// clients of the bus (the runtime above all) do not link the server.
package embedded

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/mesh"
)

// Config configures the embedded NATS server that `a2a-platform up` runs.
type Config struct {
	// StoreDir is where JetStream keeps its files. Required.
	StoreDir string
	// Listen is host:port for TCP clients (runtimes, `serve` processes, consumers).
	// Empty means in-process connections only.
	Listen string
	// WebSocketListen is host:port for NATS over WebSocket; empty disables it.
	WebSocketListen string
	// MonitorListen is host:port for the server's HTTP monitoring (/varz,
	// /jsz, /connz…), which the NATS exporters scrape; empty disables it.
	// It needs no credential and shows every connection: keep it private.
	MonitorListen string
	// Accounts is NATS configuration text for the server's accounts and
	// authorisation (bus.AccountsConfig's rendering). Empty leaves the server
	// with one open account, for tests of the bus alone.
	Accounts string
	// MaxPayload is the largest message the server accepts. Default
	// mesh.MaxBusPayload, what deploy/nats/*.conf allow too.
	MaxPayload int32
	// Logger receives the server's own log lines at debug level and up.
	Logger zerolog.Logger
	// ServerName names the server in monitoring and among the nodes of a
	// cluster, where each needs its own. Default "a2a-mesh".
	ServerName string
	// ClusterName, when set, makes the server one node of a cluster of that
	// name: JetStream is then clustered and needs a quorum of the nodes
	// (two of three) to elect its leaders. Every node uses the same name.
	// Empty runs a single server.
	ClusterName string
	// ClusterListen is host:port where the node takes routes from the other
	// nodes. Required with ClusterName: the others must know it before it
	// starts, so port 0 is refused.
	ClusterListen string
	// Routes are the nats-route:// URLs of the nodes of the cluster; listing
	// the node's own is allowed, so every node can be given the same list.
	Routes []string
	// GatewayListen, with ClusterName, makes the cluster one region of a
	// supercluster: the server takes gateway connections from the other
	// clusters here (host:port). Gateways names where each other cluster's
	// gateways are reached (cluster name to gateway URLs).
	GatewayListen string
	Gateways      map[string][]string
	// GatewayAdvertise is the gateway address the server tells the other
	// clusters (default: GatewayListen). An address no one listens on keeps
	// them to the URLs they were given, when those run through proxies.
	GatewayAdvertise string
}

// Server is a running embedded NATS server with JetStream.
type Server struct {
	ns        *server.Server
	websocket bool
}

// Start starts an embedded NATS server with JetStream on local disk and
// waits until it accepts connections.
func Start(cfg Config) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("embedded: StoreDir is required")
	}
	opts := &server.Options{}
	if cfg.Accounts != "" {
		if err := opts.ProcessConfigString(cfg.Accounts); err != nil {
			return nil, fmt.Errorf("bus: accounts configuration: %w", err)
		}
	}
	opts.ServerName = cfg.ServerName
	if opts.ServerName == "" {
		opts.ServerName = "a2a-mesh"
	}
	if err := cfg.cluster(opts); err != nil {
		return nil, err
	}
	if err := cfg.gateway(opts); err != nil {
		return nil, err
	}
	opts.JetStream = true
	opts.StoreDir = cfg.StoreDir
	opts.DontListen = cfg.Listen == ""
	opts.MaxPayload = cfg.MaxPayload
	opts.NoSigs = true
	opts.JetStreamMaxMemory = 256 << 20
	if opts.MaxPayload == 0 {
		opts.MaxPayload = mesh.MaxBusPayload
	}
	// -1 lifts the server's default cap of 1,000 consumers per stream: the
	// pending queue has one durable consumer per agent.
	opts.JetStreamLimits.DefaultMaxConsumers = -1
	if cfg.Listen != "" {
		host, port, err := splitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("bus: nats listen address: %w", err)
		}
		opts.Host, opts.Port = host, port
	}
	if cfg.WebSocketListen != "" {
		host, port, err := splitHostPort(cfg.WebSocketListen)
		if err != nil {
			return nil, fmt.Errorf("bus: websocket listen address: %w", err)
		}
		opts.Websocket.Host, opts.Websocket.Port = host, port
		// TLS is terminated in front of the platform (see deploy/); the token
		// is the authentication either way.
		opts.Websocket.NoTLS = true
	}
	if cfg.MonitorListen != "" {
		host, port, err := splitHostPort(cfg.MonitorListen)
		if err != nil {
			return nil, fmt.Errorf("bus: monitor listen address: %w", err)
		}
		opts.HTTPHost, opts.HTTPPort = host, port
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: new nats server: %w", err)
	}
	ns.SetLoggerV2(serverLogger{cfg.Logger}, false, false, false)
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("bus: nats server did not become ready")
	}
	return &Server{ns: ns, websocket: cfg.WebSocketListen != ""}, nil
}

// NATS returns the underlying server, for in-process connections.
func (s *Server) NATS() *server.Server { return s.ns }

// InProcessConn opens a connection to the server without a socket (see
// bus.ConnConfig.Server).
func (s *Server) InProcessConn() (net.Conn, error) { return s.ns.InProcessConn() }

// ClientURL is the nats:// URL TCP clients use, or "" without a TCP listener.
func (s *Server) ClientURL() string {
	if s.ns.Addr() == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// WebSocketURL is the ws:// URL, or "" when WebSocket is off.
func (s *Server) WebSocketURL() string {
	if !s.websocket {
		return ""
	}
	return s.ns.WebsocketURL()
}

// MonitorURL is the http:// URL of the server's monitoring, or "" when
// it is off.
func (s *Server) MonitorURL() string {
	addr := s.ns.MonitorAddr()
	if addr == nil {
		return ""
	}
	return "http://" + addr.String()
}

// JetStreamEnabled reports whether JetStream is up.
func (s *Server) JetStreamEnabled() bool { return s.ns.JetStreamEnabled() }

// Name is the server's name (Config.ServerName).
func (s *Server) Name() string { return s.ns.Name() }

// MetaLeader reports whether this node of a cluster leads its JetStream
// meta group, which places every stream and consumer.
func (s *Server) MetaLeader() bool { return s.ns.JetStreamIsLeader() }

// Shutdown stops the server; JetStream flushes its files first.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// cluster sets the route options of a cluster node.
func (cfg Config) cluster(opts *server.Options) error {
	if cfg.ClusterName == "" {
		if cfg.ClusterListen != "" || len(cfg.Routes) > 0 {
			return errors.New("embedded: ClusterListen and Routes need ClusterName")
		}
		return nil
	}
	host, port, err := splitHostPort(cfg.ClusterListen)
	if err != nil {
		return fmt.Errorf("bus: cluster listen address: %w", err)
	}
	if port == server.RANDOM_PORT {
		return errors.New("embedded: ClusterListen needs a fixed port, which the other nodes' routes name")
	}
	opts.Cluster.Name = cfg.ClusterName
	opts.Cluster.Host, opts.Cluster.Port = host, port
	for _, r := range cfg.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return fmt.Errorf("bus: route %q: not a nats-route:// URL", r)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

// gateway sets the gateway options of a region's node.
func (cfg Config) gateway(opts *server.Options) error {
	if cfg.GatewayListen == "" {
		if len(cfg.Gateways) > 0 || cfg.GatewayAdvertise != "" {
			return errors.New("embedded: Gateways and GatewayAdvertise need GatewayListen")
		}
		return nil
	}
	if cfg.ClusterName == "" {
		return errors.New("embedded: GatewayListen needs ClusterName, the region's name")
	}
	host, port, err := splitHostPort(cfg.GatewayListen)
	if err != nil {
		return fmt.Errorf("bus: gateway listen address: %w", err)
	}
	opts.Gateway.Name = cfg.ClusterName
	opts.Gateway.Host, opts.Gateway.Port = host, port
	opts.Gateway.Advertise = cfg.GatewayAdvertise
	names := make([]string, 0, len(cfg.Gateways))
	for name := range cfg.Gateways {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		remote := &server.RemoteGatewayOpts{Name: name}
		for _, g := range cfg.Gateways[name] {
			u, err := url.Parse(g)
			if err != nil || u.Host == "" {
				return fmt.Errorf("bus: gateway %q of %s: not a nats:// URL", g, name)
			}
			remote.URLs = append(remote.URLs, u)
		}
		opts.Gateway.Gateways = append(opts.Gateway.Gateways, remote)
	}
	return nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", p, err)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// serverLogger sends the NATS server's log lines to zerolog.
type serverLogger struct{ l zerolog.Logger }

func (s serverLogger) Noticef(format string, v ...any) { s.l.Debug().Msgf(format, v...) }
func (s serverLogger) Warnf(format string, v ...any)   { s.l.Warn().Msgf(format, v...) }
func (s serverLogger) Fatalf(format string, v ...any)  { s.l.Error().Msgf(format, v...) }
func (s serverLogger) Errorf(format string, v ...any)  { s.l.Error().Msgf(format, v...) }
func (s serverLogger) Debugf(format string, v ...any)  { s.l.Trace().Msgf(format, v...) }
func (s serverLogger) Tracef(format string, v ...any)  { s.l.Trace().Msgf(format, v...) }
