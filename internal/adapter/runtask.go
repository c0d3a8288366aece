package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/tracing"
	"go.opentelemetry.io/otel/trace"
)

var tracer = tracing.Tracer("adapter")

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeFailure(w, http.StatusMethodNotAllowed, "method not allowed: use GET")
		return
	}
	if s.queue.isClosed() {
		writeFailure(w, http.StatusServiceUnavailable, ErrShuttingDown.Error())
		return
	}
	// KeepAlive: a streaming task's 200 is sent as soon as the task has its
	// turn (run), before the host starts.
	writeJSON(w, http.StatusOK, adapterapi.Health{OK: true, Provider: s.cfg.Provider.Name(), Busy: s.queue.busy(), KeepAlive: true})
}

func (s *Server) handleRunTask(w http.ResponseWriter, r *http.Request) {
	r, span := tracing.StartHTTPServer(r, tracer, "adapter run-task")
	defer span.End()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeFailure(w, http.StatusMethodNotAllowed, "method not allowed: use POST")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeFailure(w, http.StatusUnsupportedMediaType, "content type must be application/json")
		return
	}
	body, status, err := readBody(w, r)
	if err != nil {
		writeFailure(w, status, err.Error())
		return
	}
	req, err := decodeRunTask(body)
	if err == nil {
		// A request reaching here with a token configured carried it
		// (authenticate): it comes from the runtime that started us.
		err = checkVariables(req.Environment, s.cfg.AuthToken != "")
	}
	if err != nil {
		s.log.Info().Ctx(r.Context()).Err(err).Msg("run-task request refused")
		writeFailure(w, http.StatusBadRequest, err.Error())
		return
	}
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrTaskRunID.String(req.TaskRunID), tracing.AttrProvider.String(s.cfg.Provider.Name()))
	}
	log := s.log.With().Ctx(r.Context()).Str("task_run_id", req.TaskRunID).Str("conversation_id", req.ConversationID).Logger()
	if err := s.queue.acquire(r.Context()); err != nil {
		s.refuse(w, log, err)
		return
	}
	defer s.queue.release()
	s.run(w, r, log, provider.NewTask(req, body, s.cfg.Workdir, s.cfg.Instructions))
}

// presizedBody bounds the buffer a body's declared length gets before its
// bytes come: a longer body grows as it arrives, so a header alone has no
// more than this held.
const presizedBody = 1 << 20

// readBody reads the whole body within MaxRequestBytes; the background read
// that lets the server notice a client going away only starts after it.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	if r.ContentLength > MaxRequestBytes {
		return nil, http.StatusRequestEntityTooLarge, errBodyTooLarge
	}
	if r.ContentLength > 0 && r.ContentLength <= presizedBody {
		// A body of known length (the server reads no more of it) is read
		// into one buffer of its size: io.ReadAll would grow one several
		// times.
		body := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("read request body: %w", err)
		}
		return body, http.StatusOK, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return nil, http.StatusRequestEntityTooLarge, errBodyTooLarge
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("read request body: %w", err)
	}
	return body, http.StatusOK, nil
}

// refuse answers a request that got no turn.
func (s *Server) refuse(w http.ResponseWriter, log zerolog.Logger, err error) {
	switch {
	case errors.Is(err, ErrQueueFull):
		log.Warn().Msg("task refused: queue full")
		w.Header().Set("Retry-After", retryAfterSeconds)
		writeFailure(w, http.StatusTooManyRequests, err.Error())
	case errors.Is(err, ErrShuttingDown):
		log.Info().Msg("task refused: shutting down")
		writeFailure(w, http.StatusServiceUnavailable, err.Error())
	default:
		log.Info().Msg("runtime disconnected while the task was queued")
	}
}

// run runs one task and writes its reply.
func (s *Server) run(w http.ResponseWriter, r *http.Request, log zerolog.Logger, task *provider.Task) {
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	stopAbort := context.AfterFunc(s.abortCtx, func() { cancel(ErrShuttingDown) })
	defer stopAbort()
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, s.cfg.TaskTimeout, &timeoutError{s.cfg.TaskTimeout})
	defer cancelTimeout()

	progress := func(p provider.Progress) {
		log.Debug().Str("progress", p.Message).Msg("task progress")
	}
	var st *stream
	if wantsStream(r) {
		st = newStream(w)
		progress = st.progress
	}

	start := time.Now()
	log.Info().Str("task_type", task.Request.TaskType).Msg("task started")
	res, err := s.runHost(ctx, task, progress)
	if err != nil && ctx.Err() != nil {
		// Why the task was stopped says more than how the provider noticed.
		err = stopReason(ctx, r.Context())
	}
	elapsed := time.Since(start)
	if err != nil {
		log.Warn().Dur("elapsed_ms", elapsed).Str("error", err.Error()).Msg("task failed")
	} else {
		log.Info().Dur("elapsed_ms", elapsed).Msg("task succeeded")
	}

	if st != nil {
		st.result(res, err)
		return
	}
	writeJSON(w, http.StatusOK, replyBody(res, err))
}

func stopReason(taskCtx, reqCtx context.Context) error {
	cause := context.Cause(taskCtx)
	if reqCtx.Err() != nil && errors.Is(cause, context.Canceled) {
		return errClientGone
	}
	return cause
}

// runHost runs the task's host process in a span of its own, a child of
// the run-task request's.
func (s *Server) runHost(ctx context.Context, t *provider.Task, progress func(provider.Progress)) (*provider.Result, error) {
	if !tracing.Active() {
		return s.callProvider(ctx, t, progress)
	}
	ctx, span := tracer.Start(ctx, "adapter host "+s.cfg.Provider.Name(),
		trace.WithAttributes(tracing.AttrTaskRunID.String(t.Request.TaskRunID), tracing.AttrProvider.String(s.cfg.Provider.Name())))
	defer span.End()
	res, err := s.callProvider(ctx, t, progress)
	if err != nil {
		tracing.Fail(span, "HOST_FAILED")
	}
	return res, err
}

// callProvider runs the provider, turning a panic into a failure so that
// one bad task cannot take the adapter down or leave the queue stuck.
func (s *Server) callProvider(ctx context.Context, t *provider.Task, progress func(provider.Progress)) (res *provider.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			// Only the panic's type: its value may hold the task's input or
			// the secrets of the host's environment.
			s.log.Error().Str("panic_type", fmt.Sprintf("%T", p)).Msg("provider panicked")
			res, err = nil, fmt.Errorf("provider %s failed unexpectedly", s.cfg.Provider.Name())
		}
	}()
	return s.cfg.Provider.Run(ctx, t, progress)
}
