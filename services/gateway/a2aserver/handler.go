package a2aserver

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/mesh"
)

// handler implements the SDK's a2asrv.RequestHandler over task runs.
//
// The SDK's default handler (a2asrv.NewHandler) runs executions in the
// process that accepted the message and keeps them there: SubscribeToTask
// finds only executions of its own process, a blocking send waits on an
// execution in memory, and the task id is drawn before the executor runs.
// A task here is a task run, which lives on the bus and outlives the
// gateway that accepted it; so this handler answers every method from the
// run record and the event stream, through the SDK's own extension points
// (taskStore, busQueues, runExecutor), and any gateway instance answers for
// any task, before or after a restart.
type handler struct {
	s      *Server
	store  *taskStore
	queues *busQueues
	exec   *runExecutor
}

var _ a2asrv.RequestHandler = (*handler)(nil)

func newHandler(s *Server) *handler {
	h := &handler{s: s, store: &taskStore{s: s}, queues: &busQueues{s: s}}
	h.exec = &runExecutor{s: s, store: h.store, queues: h.queues}
	return h
}

// GetTask implements a2asrv.RequestHandler.
func (h *handler) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "historyLength must not be negative")
	}
	st, err := h.store.Get(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	trimHistory(st.Task, req.HistoryLength)
	return st.Task, nil
}

// ListTasks implements a2asrv.RequestHandler.
func (h *handler) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	return h.store.List(ctx, req)
}

// CancelTask implements a2asrv.RequestHandler: the run is canceled, and the
// runtime working on it stops the agent host.
func (h *handler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	st, err := h.store.Get(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if st.Task.Status.State.Terminal() {
		return nil, a2a.NewError(a2a.ErrTaskNotCancelable, fmt.Sprintf("the task is %s and cannot be canceled", strings.ToLower(strings.TrimPrefix(string(st.Task.Status.State), "TASK_STATE_"))))
	}
	execCtx := &a2asrv.ExecutorContext{TaskID: st.Task.ID, ContextID: st.Task.ContextID, StoredTask: st.Task, Metadata: req.Metadata}
	for _, err := range h.exec.Cancel(ctx, execCtx) {
		if err != nil {
			return nil, err
		}
	}
	st, err = h.store.Get(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	return st.Task, nil
}

// SendMessage implements a2asrv.RequestHandler. A blocking send (the
// default) waits until the task reaches a final state, for at most
// BlockingWait; when no runtime has claimed the task after OfflineWait and
// the agent's runtime is offline, the submitted task is the answer rather
// than a long wait. returnImmediately (0.3: blocking false) answers the
// task as soon as it exists.
func (h *handler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	execCtx, err := h.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	rq := requestOf(ctx)
	wait, cancel := context.WithTimeout(ctx, h.s.cfg.BlockingWait)
	defer cancel()
	var submitted atomic.Bool
	offline := time.AfterFunc(h.s.cfg.OfflineWait, func() {
		if submitted.Load() && !h.online(ctx, rq.agent.ID) {
			cancel()
		}
	})
	defer offline.Stop()
	var taskID a2a.TaskID
	for ev, err := range h.exec.Execute(wait, execCtx) {
		if err != nil {
			return nil, err
		}
		if taskID == "" {
			taskID = ev.TaskInfo().TaskID
			if err := h.pushFromSend(ctx, req, taskID); err != nil {
				return nil, err
			}
			if req.Config != nil && req.Config.ReturnImmediately {
				break
			}
		}
		submitted.Store(stateOf(ev) == a2a.TaskStateSubmitted)
	}
	st, run, err := h.store.get(ctx, string(taskID))
	if err != nil {
		return nil, err
	}
	if reply := a2atask.ReplyMessage(run, h.s.download); reply != nil {
		// The agent answered in one shot (output.reply "message"): the
		// answer is its message, not the task (spec 1.0 §3.1.1).
		return reply, nil
	}
	if req.Config != nil {
		trimHistory(st.Task, req.Config.HistoryLength)
	}
	return st.Task, nil
}

// SendStreamingMessage implements a2asrv.RequestHandler: the task, then its
// status and artifact updates, live from the bus, until a final state.
func (h *handler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		execCtx, err := h.prepare(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		ctx, cancel := h.streamContext(ctx)
		defer cancel()
		first := true
		for ev, err := range h.exec.Execute(ctx, execCtx) {
			if err == nil && first {
				first = false
				err = h.pushFromSend(ctx, req, ev.TaskInfo().TaskID)
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// SubscribeToTask implements a2asrv.RequestHandler: the task as it is now,
// then its events until it is terminal. A task waiting for input is
// interrupted, not ended: the stream goes on through the caller's answer
// to the task's end. A task in a terminal state has nothing to follow
// (spec 1.0 §3.1.6).
func (h *handler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		st, err := h.store.Get(ctx, req.ID)
		if err != nil {
			yield(nil, err)
			return
		}
		if st.Task.Status.State.Terminal() {
			yield(nil, a2a.NewError(a2a.ErrUnsupportedOperation, "the task has ended: read it with GetTask"))
			return
		}
		ctx, cancel := h.streamContext(ctx)
		defer cancel()
		h.exec.stream(ctx, requestOf(ctx).agent.ID, string(req.ID), a2a.TaskState.Terminal, yield)
	}
}

// GetExtendedAgentCard implements a2asrv.RequestHandler: the card with the
// agent's runtime presence, for 1.0 callers (the endpoint answers 0.3
// callers itself: serveExtendedCard03).
func (h *handler) GetExtendedAgentCard(ctx context.Context, _ *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	rq := requestOf(ctx)
	card, err := h.s.extendedCard(ctx, rq.agent)
	if err != nil {
		return nil, toA2A(h.s.log, err)
	}
	return card, nil
}

// prepare checks a message and says what to execute: a new task, or the
// continuation of the task it names.
func (h *handler) prepare(ctx context.Context, req *a2a.SendMessageRequest) (*a2asrv.ExecutorContext, error) {
	rq := requestOf(ctx)
	msg := req.Message
	switch {
	case msg == nil:
		return nil, a2a.NewError(a2a.ErrInvalidParams, "message is required")
	case msg.ID == "":
		return nil, a2a.NewError(a2a.ErrInvalidParams, "message.messageId is required")
	case len(msg.Parts) == 0:
		return nil, a2a.NewError(a2a.ErrInvalidParams, "message.parts must not be empty")
	case msg.Role != a2a.MessageRoleUser:
		return nil, a2a.NewError(a2a.ErrInvalidParams, "a message to an agent has the user role")
	case len(msg.ID) > 256:
		return nil, a2a.NewError(a2a.ErrInvalidParams, "message.messageId is longer than 256 characters")
	}
	if req.Config != nil && !acceptsOurOutput(req.Config.AcceptedOutputModes) {
		return nil, a2a.NewError(a2a.ErrUnsupportedContentType, "the agent answers with text/plain (and application/json, files): acceptedOutputModes lists none of them")
	}
	if req.Config != nil && req.Config.HistoryLength != nil && *req.Config.HistoryLength < 0 {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "historyLength must not be negative")
	}
	if msg.TaskID != "" {
		st, run, err := h.store.get(ctx, string(msg.TaskID))
		if err != nil {
			return nil, err
		}
		if msg.ContextID != "" && msg.ContextID != st.Task.ContextID {
			return nil, a2a.NewError(a2a.ErrInvalidParams, "contextId is not the task's context")
		}
		if run.Status != mesh.StatusInputRequired {
			return nil, notWaiting(run)
		}
		return &a2asrv.ExecutorContext{Message: msg, TaskID: st.Task.ID, ContextID: st.Task.ContextID, StoredTask: st.Task, Metadata: req.Metadata}, nil
	}
	if msg.ContextID != "" {
		if err := h.checkContext(ctx, rq, msg.ContextID); err != nil {
			return nil, err
		}
	}
	return &a2asrv.ExecutorContext{Message: msg, ContextID: msg.ContextID, Metadata: req.Metadata}, nil
}

// checkContext admits a client-provided contextId: a context this agent gave
// the same caller before (the owner: any conversation of the platform).
func (h *handler) checkContext(ctx context.Context, rq *request, contextID string) error {
	if !mesh.ValidID(contextID) {
		return errUnknownContext
	}
	owner, err := h.s.records.contextOwner(ctx, rq.agent.ID, contextID)
	if err != nil {
		return toA2A(h.s.log, err)
	}
	switch {
	case owner != nil && owner.AgentID == rq.agent.ID && owner.Caller == rq.caller.ID && !rq.caller.Anonymous():
		return nil
	case rq.caller.Owner():
		if _, err := h.s.client.GetConversation(ctx, contextID); err != nil {
			return errUnknownContext
		}
		return nil
	}
	return errUnknownContext
}

// acceptsOurOutput reports whether a client that lists the output modes it
// accepts accepts text (every answer has it).
func acceptsOurOutput(modes []string) bool {
	if len(modes) == 0 {
		return true
	}
	return slices.ContainsFunc(modes, func(m string) bool {
		m = strings.ToLower(strings.TrimSpace(m))
		return m == "text/plain" || m == "text" || m == "*/*" || m == "text/*"
	})
}

// online reports whether the agent has a runtime whose heartbeats arrive.
func (h *handler) online(ctx context.Context, agentID string) bool {
	online, err := h.s.client.AgentOnline(ctx, agentID)
	// Not knowing is no reason to stop waiting.
	return online || err != nil
}

// streamContext bounds an event stream: it ends with the request, when the
// gateway stops, or after streamDeadline.
func (h *handler) streamContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, streamDeadline)
	go func() {
		select {
		case <-h.s.closing:
			cancel()
		case <-h.s.cfg.Closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// stateOf is the task state an event tells, or "" for artifact updates.
func stateOf(ev a2a.Event) a2a.TaskState {
	switch v := ev.(type) {
	case *a2a.Task:
		return v.Status.State
	case *a2a.TaskStatusUpdateEvent:
		return v.Status.State
	}
	return a2a.TaskStateUnspecified
}
