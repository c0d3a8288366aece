// Package toolserver is the local tool server a runtime gives the agent
// host of each task it runs: a Model Context Protocol server (streamable
// HTTP, on loopback) whose tools find the agents this agent may delegate
// to, send them tasks, follow and cancel those tasks. The tools act for one
// run: each run gets a random capability (a bearer token) valid only while
// the runtime holds that run, and every call is checked again by the
// platform (the runtime holds the run, the agent's policy allows the
// target). The adapter passes the address and capability to the host; it
// never sees the runtime's credential.
package toolserver

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Platform is what the tools ask of the platform, with the runtime's own
// credential (a runtime client over the bus implements it).
type Platform interface {
	DelegateAgents(ctx context.Context, req meshapi.DelegateAgentsRequest) (*meshapi.DelegateAgentList, error)
	DelegateSend(ctx context.Context, req meshapi.DelegateSendRequest) (*meshapi.DelegateSendResponse, error)
	DelegateGet(ctx context.Context, req meshapi.DelegateGetRequest) (*meshapi.DelegatedTask, error)
	DelegateArtifact(ctx context.Context, req meshapi.DelegateArtifactRequest) (*meshapi.DelegateArtifactResponse, error)
	DelegateCancel(ctx context.Context, req meshapi.DelegateCancelRequest) (*meshapi.DelegatedTask, error)
	Approval(ctx context.Context, req meshapi.ApprovalRequest) (*meshapi.ApprovalResponse, error)
}

// FolderHeader names the run's folder on this machine: files sent with a
// task are read from it, and artifacts of delegated tasks saved into it.
// The adapter sets it in the host's tool configuration.
const FolderHeader = "X-A2A-Run-Folder"

// Path is where the server answers MCP requests.
const Path = "/mcp"

// Config configures a Server.
type Config struct {
	Platform Platform
	// Listen is the loopback address to serve on. Default 127.0.0.1:0.
	Listen string
	// CallTimeout bounds one platform call. Default 30s.
	CallTimeout time.Duration
	// WaitLimit bounds a send_task or get_task that waits for the result.
	// Default adapterapi.ToolWaitLimit, which hosts are told to wait for.
	WaitLimit time.Duration
	// IdleClose is how long the server keeps listening once no run's tools
	// are open. Default DefaultIdleClose.
	IdleClose time.Duration
}

// DefaultIdleClose keeps the listening socket of a runtime that finishes a
// run and takes the next within a few seconds: opening and closing it for
// every run cost a tenth of a busy runtime's CPU. A runtime idle for longer
// listens on nothing; a capability still ends with its run.
const DefaultIdleClose = 5 * time.Second

// Server serves the tools of every run the runtime holds, each behind its
// own capability. It listens only while a run's tools are open, and for
// IdleClose after: a runtime with no run for longer opens no listening
// socket.
type Server struct {
	cfg     Config
	handler http.Handler

	mu   sync.Mutex
	runs map[string]*runTools // by capability
	ln   net.Listener         // nil while not listening
	http *http.Server
	// idle is the generation of the pending stop once the last run
	// closed; an Open or a later close makes a pending stop stale.
	idle uint64
}

// runTools is the tool server of one run.
type runTools struct {
	runID string
	// holder names the capability to the MCP handler, which binds each
	// session to the holder that opened it: a session id never works with
	// another run's capability.
	holder string
	cfg    *Config
	p      Platform

	// The MCP server is made at the host's first request, not at Open:
	// making one infers and checks the schemas of every tool, which cost
	// more than the rest of a run's work in the runtime, and most runs'
	// hosts never call a tool.
	mu     sync.Mutex
	server *mcp.Server // nil until the first request
	ended  bool        // the run's turn ended: no server is made or served
}

// mcpServer is the run's MCP server, made on first use; nil once the run's
// tools are closed.
func (rt *runTools) mcpServer() *mcp.Server {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.ended {
		return nil
	}
	if rt.server == nil {
		rt.server = rt.newServer()
	}
	return rt.server
}

// end stops serving the run's tools and closes its open sessions (they end
// with the capability, not at their idle timeout).
func (rt *runTools) end() {
	rt.mu.Lock()
	rt.ended = true
	srv := rt.server
	rt.mu.Unlock()
	if srv == nil {
		return
	}
	for ss := range srv.Sessions() {
		_ = ss.Close()
	}
}

// Start checks cfg and prepares the server; it listens from the first Open.
func Start(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.WaitLimit == 0 {
		cfg.WaitLimit = adapterapi.ToolWaitLimit
	}
	if cfg.IdleClose == 0 {
		cfg.IdleClose = DefaultIdleClose
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, errors.New("toolserver: the tool server listens on a loopback address only")
	}
	s := &Server{cfg: cfg, runs: map[string]*runTools{}}
	mcpHandler := mcp.NewStreamableHTTPHandler(s.serverFor, &mcp.StreamableHTTPOptions{SessionTimeout: 10 * time.Minute})
	mux := http.NewServeMux()
	authenticate := auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	mux.Handle(Path, authenticate(mcpHandler))
	s.handler = mux
	return s, nil
}

// URL is the server's MCP endpoint while a run's tools are open, else "".
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String() + Path
}

// Close stops serving and revokes every capability.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.runs)
	s.stopLocked()
	return nil
}

func (s *Server) listenLocked() error {
	if s.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("tool server: %w", err)
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	s.ln, s.http = ln, srv
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// stopLocked closes the listener and every connection: no run is left
// whose host may call.
func (s *Server) stopLocked() {
	if s.http == nil {
		return
	}
	_ = s.http.Close()
	s.ln, s.http = nil, nil
}

// stopIdle stops listening if no run was opened or closed since the stop
// of generation gen was planned.
func (s *Server) stopIdle(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle == gen && len(s.runs) == 0 {
		s.stopLocked()
	}
}

// Open makes the tools of a run the runtime now holds, listening if it
// was not, and returns their capability; close revokes it (call it when
// the run's turn ends), and stops listening IdleClose after no run is left.
func (s *Server) Open(runID string) (capability string, close func(), err error) {
	capability = "a2acap_" + randomHex(32)
	rt := &runTools{runID: runID, holder: randomHex(16), cfg: &s.cfg, p: s.cfg.Platform}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.listenLocked(); err != nil {
		return "", nil, err
	}
	s.idle++
	s.runs[capability] = rt
	return capability, func() {
		rt.end()
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.runs, capability)
		if len(s.runs) == 0 {
			s.idle++
			gen := s.idle
			time.AfterFunc(s.cfg.IdleClose, func() { s.stopIdle(gen) })
		}
	}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// errExpired is the answer to a capability no live run holds.
var errExpired = fmt.Errorf("%w: unknown or expired capability: the tools of a run work only while it runs", auth.ErrInvalidToken)

// verify admits requests that carry a live run's capability.
func (s *Server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	rt := s.lookup(token)
	if rt == nil {
		return nil, errExpired
	}
	return &auth.TokenInfo{UserID: rt.holder, Extra: map[string]any{runKey: rt}}, nil
}

// runKey is the run's tools in the TokenInfo's Extra.
const runKey = "run"

func (s *Server) lookup(token string) *runTools {
	if token == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, rt := range s.runs {
		if subtle.ConstantTimeCompare([]byte(c), []byte(token)) == 1 {
			return rt
		}
	}
	return nil
}

func (s *Server) serverFor(r *http.Request) *mcp.Server {
	info := auth.TokenInfoFromContext(r.Context())
	if info == nil {
		return nil
	}
	rt, _ := info.Extra[runKey].(*runTools)
	if rt == nil {
		return nil
	}
	return rt.mcpServer()
}
