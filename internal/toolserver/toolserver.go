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
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	// Default 30 minutes.
	WaitLimit time.Duration
}

// Server serves the tools of every run the runtime holds, each behind its
// own capability.
type Server struct {
	cfg  Config
	ln   net.Listener
	http *http.Server

	mu   sync.Mutex
	runs map[string]*runTools // by capability
}

// runTools is the tool server of one run.
type runTools struct {
	runID  string
	server *mcp.Server
	cfg    *Config
	p      Platform
}

// Start listens on loopback and serves.
func Start(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.WaitLimit == 0 {
		cfg.WaitLimit = 30 * time.Minute
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, errors.New("toolserver: the tool server listens on a loopback address only")
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ln: ln, runs: map[string]*runTools{}}
	mcpHandler := mcp.NewStreamableHTTPHandler(s.serverFor, &mcp.StreamableHTTPOptions{SessionTimeout: 10 * time.Minute})
	mux := http.NewServeMux()
	mux.Handle(Path, s.authenticate(mcpHandler))
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(ln) }()
	return s, nil
}

// URL is the server's MCP endpoint.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + Path }

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.http.Shutdown(ctx)
}

// Open makes the tools of a run the runtime now holds and returns their
// capability; close revokes it (call it when the run's turn ends).
func (s *Server) Open(runID string) (capability string, close func()) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	capability = "a2acap_" + hex.EncodeToString(b)
	rt := &runTools{runID: runID, cfg: &s.cfg, p: s.cfg.Platform}
	rt.server = rt.newServer()
	s.mu.Lock()
	s.runs[capability] = rt
	s.mu.Unlock()
	return capability, func() {
		s.mu.Lock()
		delete(s.runs, capability)
		s.mu.Unlock()
	}
}

type ctxKey struct{}

// authenticate admits requests that carry a live run's capability.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt := s.lookup(r.Header.Get("Authorization"))
		if rt == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="a2a-runtime"`)
			http.Error(w, "unknown or expired capability: the tools of a run work only while it runs", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, rt)))
	})
}

func (s *Server) lookup(header string) *runTools {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || token == "" {
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
	rt, _ := r.Context().Value(ctxKey{}).(*runTools)
	if rt == nil {
		return nil
	}
	return rt.server
}
