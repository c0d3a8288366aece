package adapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/adapter/provider"
)

// Defaults of Config.
const (
	// DefaultListen is the endpoint the official runtime calls (seed 000
	// "Official Runtime Default"), on loopback.
	DefaultListen = "127.0.0.1:18789"
	// DefaultQueueSize is how many requests may wait behind a running task.
	DefaultQueueSize = 4
	// DefaultTaskTimeout bounds one task run.
	DefaultTaskTimeout = 10 * time.Minute
)

// retryAfterSeconds is the Retry-After of a 429: tasks take seconds to
// minutes, so an earlier retry would only find the queue full again.
const retryAfterSeconds = "5"

// Config configures a Server.
type Config struct {
	// Provider runs the tasks. Required.
	Provider provider.Provider
	// Workdir is the root of the per-conversation working directories.
	// Required.
	Workdir string
	// Instructions is the text of the instruction file, given to every task
	// ahead of the request's own instructions. Optional.
	Instructions string
	// QueueSize is how many requests may wait while a task runs. Default
	// DefaultQueueSize when zero; negative means none may wait.
	QueueSize int
	// TaskTimeout bounds one task run, queueing excluded. Default
	// DefaultTaskTimeout.
	TaskTimeout time.Duration
	// AllowRemote permits a non-loopback listen address, and requests for
	// any Host (otherwise only loopback names are answered). It requires
	// AuthToken, since the adapter is no authentication boundary otherwise.
	AllowRemote bool
	// AuthToken, when set, must be sent as "Authorization: Bearer <token>"
	// with every request but GET /health. The runtime that starts the
	// adapter gives it a new one at each start; without one, any program
	// of any user on the machine may post tasks. Default: none.
	AuthToken string
	// Logger receives the adapter's logs. Default: none.
	Logger zerolog.Logger
}

// Server is the adapter's HTTP server.
type Server struct {
	cfg     Config
	log     zerolog.Logger
	queue   *queue
	handler http.Handler
	http    *http.Server
	// abortCtx ends when a shutdown runs out of grace; running tasks stop.
	abortCtx context.Context
	abort    context.CancelCauseFunc
	// conns knows the connections with a request being answered, so a
	// shutdown closes connections only once each has its reply.
	conns activeConns
}

// New checks cfg, fills in its defaults and returns a Server.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Provider == nil:
		return nil, errors.New("adapter: no provider")
	case cfg.Workdir == "":
		return nil, errors.New("adapter: no work directory")
	case cfg.TaskTimeout < 0:
		return nil, fmt.Errorf("adapter: negative task timeout %s", cfg.TaskTimeout)
	case cfg.AllowRemote && cfg.AuthToken == "":
		return nil, ErrRemoteNeedsAuth
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.TaskTimeout == 0 {
		cfg.TaskTimeout = DefaultTaskTimeout
	}
	s := &Server{
		cfg:   cfg,
		log:   cfg.Logger.With().Str("provider", cfg.Provider.Name()).Logger(),
		queue: newQueue(cfg.QueueSize),
	}
	s.abortCtx, s.abort = context.WithCancelCause(context.Background())
	s.handler = s.routes()
	s.http = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// ReadTimeout bounds reading a request body, so a stalled client
		// cannot hold the adapter before its task starts; net/http lifts
		// it once the body is read. No WriteTimeout: a reply comes when
		// its task ends, up to TaskTimeout later.
		ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute,
		ConnState:   s.conns.track,
	}
	return s, nil
}

// Handler returns the adapter's HTTP handler, for tests and for callers that
// run their own http.Server; those take over the loopback check that Serve
// makes.
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds addr after checking it against the security boundary: a
// non-loopback address needs Config.AllowRemote.
func (s *Server) Listen(addr string) (net.Listener, error) {
	if err := s.checkAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve answers requests on ln until Shutdown, then returns nil. It refuses
// a listener that is not on loopback unless Config.AllowRemote is set.
func (s *Server) Serve(ln net.Listener) error {
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && !s.cfg.AllowRemote {
		return fmt.Errorf("%w: %s", ErrRemoteListen, tcp)
	}
	if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// Shutdown refuses queued and new requests with 503 and lets the running
// task finish until ctx ends. Its port stays open meanwhile, and until no
// connection has arrived for lameDuckQuiet, so a request already on its way
// is answered 503 (not delivered: the runtime gives its run back) rather
// than cut on a connection closed under it, which the runtime could not
// tell from a task lost midway. If ctx ends first, it stops the running
// task, waits for its provider to stop the host, and returns an error
// saying so.
func (s *Server) Shutdown(ctx context.Context) error {
	s.queue.close()
	// Kept connections close after their next answer (a 503), so a runtime
	// reaches the stopping adapter on new connections, which lameDuck
	// counts; idle ones close now (a runtime sending on one as it closes
	// sends again on a new one: adapterclient).
	s.http.SetKeepAlivesEnabled(false)
	err := s.lameDuck(ctx)
	if err == nil {
		err = s.http.Shutdown(ctx)
	}
	if err == nil {
		return nil
	}
	s.abort(ErrShuttingDown)
	// The provider returns only once its processes are gone, and the
	// handler has flushed the reply by then; no host outlives the adapter.
	<-s.queue.idleCh()
	// A refused queued request may still be writing its 503: closing the
	// connections now would cut it off.
	select {
	case <-s.conns.done():
	case <-time.After(replyFlushTimeout):
	}
	_ = s.http.Close()
	return fmt.Errorf("shutdown grace ran out, running task stopped: %w", err)
}

// lameDuck waits, with the port open, for the running task to end and then
// for connections to stop arriving; it returns ctx's error if ctx ends
// first.
func (s *Server) lameDuck(ctx context.Context) error {
	select {
	case <-s.queue.idleCh():
	case <-ctx.Done():
		return ctx.Err()
	}
	for {
		quiet := s.conns.quietFor()
		if quiet >= lameDuckQuiet {
			return nil
		}
		select {
		case <-time.After(lameDuckQuiet - quiet):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", s.handleHealth)
	mux.HandleFunc("/run-task", s.handleRunTask)
	mux.HandleFunc("/execute", s.handleRunTask)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeFailure(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	return s.loopbackOnly(s.authenticate(mux))
}
