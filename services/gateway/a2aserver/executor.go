package a2aserver

import (
	"context"
	"errors"
	"iter"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/internal/sealed"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// runExecutor is the SDK's AgentExecutor of the platform: executing a
// message is creating a task run for the target agent (or continuing the
// run that asked for input) and following its events on the bus, which the
// agent's runtime causes wherever it is. Nothing runs in the gateway: the
// executor may stop following at any time (a client that left, a gateway
// restart) and the run goes on.
type runExecutor struct {
	s      *Server
	store  *taskStore
	queues *busQueues
}

var _ a2asrv.AgentExecutor = (*runExecutor)(nil)

// Execute starts (or continues) the run and yields the task as it is once
// followed, then its events until it reaches a final state or ctx ends.
func (e *runExecutor) Execute(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		rq := requestOf(ctx)
		run, err := e.start(ctx, rq, execCtx)
		if err != nil {
			yield(nil, err)
			return
		}
		e.stream(ctx, rq.agent.ID, run.ID, a2atask.Final, yield)
	}
}

// stream follows a run: its task first (read after the consumer started,
// so no event falls between), then its events, until a state for which
// last is true.
func (e *runExecutor) stream(ctx context.Context, agentID, taskID string, last func(a2a.TaskState) bool, yield func(a2a.Event, error) bool) {
	f, err := e.queues.follow(ctx, agentID, taskID)
	if err != nil {
		yield(nil, toA2A(e.s.log, err))
		return
	}
	defer f.Close()
	f.last = last
	st, run, err := e.store.get(ctx, taskID)
	if err != nil {
		yield(nil, err)
		return
	}
	f.seed(st.Task, run.Revision)
	if !yield(st.Task, nil) {
		return
	}
	for {
		msg, err := f.Read(ctx)
		if err != nil {
			return
		}
		if !yield(msg.Event, nil) {
			return
		}
	}
}

// Cancel cancels the run; the runtime working on it hears of it on the bus
// and stops the agent host.
func (e *runExecutor) Cancel(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		run, err := e.s.client.CancelTaskRun(ctx, meshapi.CancelTaskRunRequest{TaskRunID: string(execCtx.TaskID), Reason: "canceled by the A2A caller"})
		if errors.Is(err, mesh.ErrInvalidTransition) {
			yield(nil, a2a.NewError(a2a.ErrTaskNotCancelable, "the task has ended and cannot be canceled"))
			return
		}
		if err != nil {
			yield(nil, toA2A(e.s.log, err))
			return
		}
		yield(a2atask.StatusEvent(run), nil)
	}
}

// start creates the run of a new task, or continues the run of a task that
// asked for input, and records the A2A side.
func (e *runExecutor) start(ctx context.Context, rq *request, execCtx *a2asrv.ExecutorContext) (*mesh.TaskRun, error) {
	vars, err := takeVariables(execCtx.Message)
	if err != nil {
		return nil, err
	}
	if execCtx.StoredTask != nil {
		if len(vars) > 0 {
			return nil, a2a.NewError(a2a.ErrInvalidParams, "metadata."+VariablesKey+" is taken with the message that starts a task only")
		}
		return e.continueTask(ctx, rq, execCtx)
	}
	// Sealed before anything is stored: the platform keeps the ciphertext
	// only, which the agent's active runtime alone opens.
	var env *mesh.HostEnvironment
	if len(vars) > 0 {
		box, err := sealed.ForAgent(ctx, sealed.PlatformKeys{Client: e.s.client}, rq.agent.ID, vars)
		if err != nil {
			return nil, toA2A(e.s.log, err)
		}
		env = &mesh.HostEnvironment{Sealed: box}
	}
	msg := execCtx.Message
	contextID := execCtx.ContextID
	if contextID == "" && hasFiles(msg) {
		// Files are kept in the conversation's workspace: it must exist
		// before the run that reads them.
		conv, err := e.s.client.CreateConversation(ctx, meshapi.CreateConversationRequest{})
		if err != nil {
			return nil, toA2A(e.s.log, err)
		}
		contextID = conv.ID
	}
	in, stored, err := e.s.input(ctx, rq.agent.ID, contextID, msg)
	if err != nil {
		return nil, err
	}
	raw, err := inputJSON(in)
	if err != nil {
		return nil, toA2A(e.s.log, err)
	}
	meta := map[string]any{"a2a_message_id": msg.ID, "a2a_version": rq.version}
	if skill := messageSkill(msg); skill != "" {
		meta[meshapi.SkillKey] = skill
	}
	res, err := e.s.client.CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{
		TargetAgentID:    rq.agent.ID,
		Input:            raw,
		ConversationID:   contextID,
		InitiatorAgentID: rq.caller.AgentID,
		// The same message sent again by the same caller (a client's retry)
		// is the same task (spec 1.0 §3.3.1).
		IdempotencyKey: "a2a:" + secret.Hash(rq.caller.ID + "\x00" + msg.ID)[:40],
		Metadata:       meta,
		// Only the platform signs the claims these come from (a delegation).
		ParentTaskRunID: rq.caller.ParentTaskRunID,
		DelegationChain: rq.caller.DelegationChain,
		Environment:     env,
	})
	if err != nil {
		return nil, toA2A(e.s.log, err)
	}
	run := &res.TaskRun
	stored.TaskID, stored.ContextID = a2a.TaskID(run.ID), run.ConversationID
	task := a2atask.Task(run, []*a2a.Message{stored}, e.s.download)
	if _, err := e.store.Create(ctx, task); err != nil && !errors.Is(err, taskstore.ErrTaskAlreadyExists) {
		return nil, err
	}
	return run, nil
}

// continueTask answers a task waiting for input: the question and the
// answer join its history, and its run goes back to the queue with the new
// turn's input (the task queue adds the earlier turns, as it does for an
// answer through any door).
func (e *runExecutor) continueTask(ctx context.Context, rq *request, execCtx *a2asrv.ExecutorContext) (*mesh.TaskRun, error) {
	taskID := string(execCtx.TaskID)
	st, run, err := e.store.get(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if run.Status != mesh.StatusInputRequired {
		return nil, notWaiting(run)
	}
	in, stored, err := e.s.input(ctx, rq.agent.ID, run.ConversationID, execCtx.Message)
	if err != nil {
		return nil, err
	}
	stored.TaskID, stored.ContextID = a2a.TaskID(run.ID), run.ConversationID
	history := st.Task.History
	if q := a2atask.StatusMessage(run); q != nil {
		history = append(history, q)
	}
	task := *st.Task
	task.History = append(history, stored)
	if _, err := e.store.Update(ctx, &taskstore.UpdateRequest{Task: &task, Event: stored, PrevVersion: st.Version}); err != nil {
		if errors.Is(err, taskstore.ErrConcurrentModification) {
			return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "the task changed meanwhile (another answer came first); read it again")
		}
		return nil, err
	}
	raw, err := inputJSON(in)
	if err != nil {
		return nil, toA2A(e.s.log, err)
	}
	next, err := e.s.client.ContinueTaskRun(ctx, meshapi.ContinueTaskRunRequest{TaskRunID: run.ID, Input: raw})
	if err != nil {
		// The answer did not reach the run: it leaves the history again.
		_, _ = e.s.records.modify(context.WithoutCancel(ctx), run.TargetAgentID, run.ID, func(rec *record) error {
			rec.History = st.Task.History
			return nil
		})
		if errors.Is(err, mesh.ErrInvalidTransition) {
			return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "the task is no longer waiting for input")
		}
		return nil, toA2A(e.s.log, err)
	}
	return next, nil
}

// VariablesKey is the key of a message's metadata that carries the
// environment variables for the agent host's process: an object of strings,
// as the envelope protocol's environmentVariables (docs/a2a.md).
const VariablesKey = "environmentVariables"

// takeVariables removes the environment variables from msg's metadata and
// returns them: they are sealed, never kept with the message in the task's
// history.
func takeVariables(msg *a2a.Message) (map[string]string, error) {
	if msg == nil || msg.Metadata == nil {
		return nil, nil
	}
	raw, ok := msg.Metadata[VariablesKey]
	if !ok {
		return nil, nil
	}
	meta := make(map[string]any, len(msg.Metadata))
	for k, v := range msg.Metadata {
		if k != VariablesKey {
			meta[k] = v
		}
	}
	msg.Metadata = meta
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "metadata."+VariablesKey+" must be an object of strings")
	}
	vars := make(map[string]string, len(obj))
	for name, v := range obj {
		s, ok := v.(string)
		if !ok {
			return nil, a2a.NewError(a2a.ErrInvalidParams, "metadata."+VariablesKey+"."+name+" must be a string")
		}
		vars[name] = s
	}
	return vars, nil
}

// messageSkill is the skill a message asks for, in its metadata (skillId
// or skill_id): routing rules may match on it.
func messageSkill(msg *a2a.Message) string {
	for _, key := range []string{"skillId", meshapi.SkillKey} {
		if v, ok := msg.Metadata[key].(string); ok && v != "" && len(v) <= 128 {
			return v
		}
	}
	return ""
}

// notWaiting explains why a message for an existing task is refused (spec
// 1.0 §3.1.1: a task in a terminal state takes no more messages).
func notWaiting(run *mesh.TaskRun) error {
	if run.Status.Terminal() {
		return a2a.NewError(a2a.ErrUnsupportedOperation, "the task is "+string(run.Status)+" and takes no more messages; send a new message in its context to start another task")
	}
	return a2a.NewError(a2a.ErrUnsupportedOperation, "the task is "+string(a2atask.State(run.Status))+"; it takes a message only when it asks for input")
}
