package runtimeengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/internal/runtime/toolserver"
	"github.com/a2amesh/a2amesh/internal/sealed"
	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"go.opentelemetry.io/otel/trace"
)

// execute works on one claimed run from dispatch to report.
func (e *Engine) execute(run *mesh.TaskRun) {
	ctx, cancel := context.WithCancelCause(e.execCtx)
	defer cancel(nil)
	ctx, span := startTask(ctx, run, e.cfg.RuntimeID)
	defer span.End()
	t := &task{id: run.ID, attempt: run.Attempt, cancel: cancel}
	e.track(t)
	defer e.untrack(run.ID)
	log := e.log.With().Ctx(ctx).Str("task_run_id", run.ID).Int("attempt", run.Attempt).Logger()
	// Pulled and started, in one write: the ledger's lines of a run
	// cost a system call each.
	e.record(ledger.Entry{Event: ledger.EventTaskPulled, TaskRunID: run.ID, Attempt: run.Attempt, Status: string(run.Status)},
		ledger.Entry{Event: ledger.EventTaskStarted, TaskRunID: run.ID, Attempt: run.Attempt})

	// Progress is what the adapter reports (the claim already shows the run
	// running).
	progress := newProgressSender(e, run)
	log.Info().Msg("task started")
	e.cfg.Metrics.taskStarted()

	tctx, tcancel := context.WithTimeout(ctx, e.cfg.TaskTimeout)
	defer tcancel()
	req, err := e.request(tctx, run)
	if err != nil {
		progress.close()
		code := mesh.ReasonAttachmentUnavailable
		if errors.Is(err, errSealed) {
			code = mesh.ReasonSealedForAnotherRuntime
		}
		e.failRun(ctx, run, code, err.Error())
		return
	}
	if e.cfg.Tools != nil {
		capability, closeTools, err := e.cfg.Tools.Open(run.ID)
		if err != nil {
			// The host works without them rather than not at all.
			log.Warn().Err(err).Msg("delegation tools unavailable for this run")
		} else {
			// The capability dies with the turn, however it ends.
			defer closeTools()
			req.Tools = &adapterapi.Tools{MCPURL: e.cfg.Tools.URL(), Capability: capability, FolderHeader: toolserver.FolderHeader}
		}
	}
	began := time.Now()
	reply, err := e.cfg.Adapter.Run(tctx, req, func(l adapterapi.StreamLine) {
		progress.send(l.Message, l.Percent)
	})
	e.cfg.Metrics.adapterCall(time.Since(began))
	t.answered.Store(true)
	progress.close()
	e.suspectAdapter(err)

	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		e.stopped(ctx, run, cause)
		return
	}
	if err != nil && e.giveBack(run, err) {
		e.record(ledger.Entry{Event: EventTaskGivenBack, TaskRunID: run.ID, Attempt: run.Attempt, Message: err.Error()})
		return
	}
	e.delivered(run.ID)
	var failure *adapterclient.Failure
	switch {
	case errors.As(err, &failure):
		e.failRun(ctx, run, failure.Code, failure.Message)
	case err != nil:
		e.failRun(ctx, run, mesh.ReasonAdapterConnectionLost, err.Error())
	case reply.Kind == adapterapi.KindFailure && reply.Code == adapterapi.CodeBudgetExceeded:
		// The host stopped itself at the run's budget: what it spent counts.
		e.failRunSpent(ctx, run, mesh.ReasonBudgetExceeded, reply.Error, reply.Usage)
	case reply.Kind == adapterapi.KindFailure:
		e.failRun(ctx, run, mesh.ReasonAdapterFailure, reply.Error)
	case rejects(reply):
		_, reason := adapterapi.Rejected(reply.Output)
		e.failRun(ctx, run, mesh.ReasonRejected, reason)
	default:
		e.completeRun(ctx, run, reply.Output)
	}
}

// rejects reports whether a successful reply declines the task
// (output.rejected): the agent's answer, not a failure of its host.
func rejects(reply *adapterapi.Reply) bool {
	ok, _ := adapterapi.Rejected(reply.Output)
	return ok
}

// request builds seed 000's run-task body, with the input's stored
// attachments fetched and inline. It never carries the runtime token or the
// platform's API base.
func (e *Engine) request(ctx context.Context, run *mesh.TaskRun) (*adapterapi.RunTaskRequest, error) {
	input := run.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	input, err := e.withAttachments(ctx, run, input)
	if err != nil {
		return nil, err
	}
	env, err := e.environment(run)
	if err != nil {
		return nil, err
	}
	return &adapterapi.RunTaskRequest{
		Environment:      env,
		TaskRunID:        run.ID,
		ConversationID:   run.ConversationID,
		WorkspaceID:      run.WorkspaceID,
		TaskType:         run.TaskType,
		Input:            input,
		InitiatorAgentID: run.InitiatorAgentID,
		TargetAgentID:    run.TargetAgentID,
		Platform:         e.cfg.Platform,
		Instructions:     e.instructions(ctx),
		Budget:           budgetOf(run.RunBudget),
	}, nil
}

// budgetOf is the run's budget for the adapter, nil when it has none.
func budgetOf(l *mesh.Limit) *adapterapi.Budget {
	if l == nil {
		return nil
	}
	return &adapterapi.Budget{Tokens: l.Tokens, CostUSD: l.CostUSD}
}

// errSealed marks a run whose sealed variables this runtime cannot open.
var errSealed = errors.New("sealed variables")

// environment is the run's host environment for the adapter, with the
// caller's variables opened with the runtime's sealing key. They go to the
// adapter in this one request only: never to the ledger, a log, a report
// or a delegated run. Variables sealed to another runtime (the agent was
// paired again after the run was created) cannot be opened: the run fails
// with mesh.ReasonSealedForAnotherRuntime.
func (e *Engine) environment(run *mesh.TaskRun) (*adapterapi.Environment, error) {
	if run.Environment == nil {
		return nil, nil
	}
	env := &adapterapi.Environment{WorkingDirectory: run.Environment.WorkingDirectory}
	box := run.Environment.Sealed
	if box == nil {
		return env, nil
	}
	vars, err := sealed.Open(box, e.cfg.RuntimeID, e.cfg.SealingKey)
	switch {
	case errors.Is(err, sealed.ErrOtherRecipient), errors.Is(err, sealed.ErrNoKey):
		return nil, fmt.Errorf("%w: the environment variables were sealed for runtime %s, the agent's active runtime when the task was created, and runtime %s claimed it: send the task again", errSealed, box.RuntimeID, e.cfg.RuntimeID)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errSealed, err)
	}
	env.Variables = vars
	return env, nil
}

// instructionsTimeout bounds the question for the agent's current
// instructions before a task; a platform that does not answer in time
// gets the task sent with the instructions last known.
const instructionsTimeout = 5 * time.Second

// instructions returns the agent's instructions for the next task: the
// platform's current ones when FreshInstructions is set, as the claim
// brought them or, from a platform whose claims do not, asked for.
func (e *Engine) instructions(ctx context.Context) string {
	e.mu.Lock()
	known := e.cfg.Instructions
	e.mu.Unlock()
	if !e.cfg.FreshInstructions {
		return known
	}
	if claimed, ok := e.cfg.Transport.ClaimedInstructions(known); ok {
		return claimed
	}
	hctx, cancel := context.WithTimeout(ctx, instructionsTimeout)
	defer cancel()
	hello, err := e.cfg.Transport.Hello(hctx)
	if err != nil {
		e.log.Warn().Err(err).Msg("current instructions not fetched; the task gets those last known")
		return known
	}
	e.mu.Lock()
	e.cfg.Instructions = hello.Instructions
	e.mu.Unlock()
	return hello.Instructions
}

// stopped handles a run whose work was cut short. Canceled and reassigned
// runs are not reported (the platform already ended them); a run cut short by
// the runtime stopping is failed with the reason.
func (e *Engine) stopped(ctx context.Context, run *mesh.TaskRun, cause error) {
	switch {
	case errors.Is(cause, errShutdown):
		e.failRun(ctx, run, mesh.ReasonRuntimeShutdown, cause.Error())
	case errors.Is(cause, errReauth):
		e.record(ledger.Entry{Event: ledger.EventTaskFailed, TaskRunID: run.ID, Attempt: run.Attempt, ErrorCode: "RUNTIME_UNAUTHORIZED", Message: cause.Error()})
	default:
		e.record(ledger.Entry{Event: ledger.EventTaskCanceled, TaskRunID: run.ID, Attempt: run.Attempt, Message: cause.Error()})
		e.log.Info().Ctx(ctx).Str("task_run_id", run.ID).Str("reason", cause.Error()).Msg("task stopped")
	}
}

// failRun reports a run failed; ctx is the task's (its span is marked
// failed with the code).
func (e *Engine) failRun(ctx context.Context, run *mesh.TaskRun, code, message string) {
	e.failRunSpent(ctx, run, code, message, nil)
}

// failRunSpent is failRun with what the host reported spending (the shape
// of output.usage), which the platform counts.
func (e *Engine) failRunSpent(ctx context.Context, run *mesh.TaskRun, code, message string, usage json.RawMessage) {
	tracing.Fail(trace.SpanFromContext(ctx), code)
	fail := map[string]any{"error": message, "code": code}
	if len(usage) > 0 {
		fail["usage"] = usage
	}
	out, _ := json.Marshal(fail)
	e.record(ledger.Entry{Event: ledger.EventTaskFailed, TaskRunID: run.ID, Attempt: run.Attempt, ErrorCode: code, Message: message})
	e.log.Info().Ctx(ctx).Str("task_run_id", run.ID).Str("code", code).Msg("task failed")
	e.cfg.Metrics.taskEnded(false)
	e.deliver(ctx, ledger.ReportFail, run, meshapi.FailRequest{TaskRunID: run.ID, Attempt: run.Attempt, Output: out})
}

// completeRun stores the artifacts the output asks for, then reports the
// run completed with their refs. While the platform cannot take an
// artifact, the completion is kept in the outbox with the artifacts not
// yet stored (report.go sends them, then the report), and the run's slot
// is free at once. Each artifact is written with a key of its own (the
// report's id and its place), so that a write sent again after an answer
// that never came back stores it once.
func (e *Engine) completeRun(ctx context.Context, run *mesh.TaskRun, output map[string]any) {
	writes, err := adapterapi.ArtifactWrites(output)
	if err != nil {
		e.failRun(ctx, run, mesh.ReasonArtifactWriteFailed, err.Error())
		return
	}
	// An adapter that ends its turn with a question says so in the output;
	// the platform learns it from the report, so it leaves the output.
	inputRequired, _ := output[adapterapi.InputRequiredKey].(bool)
	delete(output, adapterapi.InputRequiredKey)
	reportID := ledger.NewReportID()
	refs := make([]map[string]any, 0, len(writes))
	for i, w := range writes {
		body, err := content(w)
		if err == nil {
			var ref map[string]any
			ref, err = e.storeArtifact(ctx, run, ArtifactContent{Write: w, Content: body, Key: writeKey(reportID, i)}, describe(w, i))
			if err == nil {
				e.record(ledger.Entry{Event: ledger.EventArtifactWritten, TaskRunID: run.ID, Attempt: run.Attempt, Message: w.Filename})
				refs = append(refs, ref)
				continue
			}
		}
		// A runtime stopping meanwhile keeps it too: its next start sends it.
		if (platformUnreachable(err) || ctx.Err() != nil) && e.cfg.Ledger != nil {
			e.keepCompletion(ctx, run, reportID, cleanOutput(output, nil), inputRequired, writes, refs, err)
			return
		}
		// Seed 000 step 6: any failed write fails the run; it is not completed.
		e.failRun(ctx, run, mesh.ReasonArtifactWriteFailed, "artifact "+describe(w, i)+" could not be stored: "+err.Error())
		return
	}
	out, err := json.Marshal(cleanOutput(output, refs))
	if err != nil {
		e.failRun(ctx, run, mesh.ReasonAdapterInvalidResponse, "output cannot be encoded: "+err.Error())
		return
	}
	e.completed(ctx, run.ID, run.Attempt, len(refs), inputRequired)
	e.deliverAs(ctx, reportID, ledger.ReportComplete, run, meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: run.Attempt, Output: out, InputRequired: inputRequired})
}

// completed records a run whose result and artifacts are ready to report.
// A completion kept with its artifacts is recorded once delivered.
func (e *Engine) completed(ctx context.Context, runID string, attempt, artifacts int, inputRequired bool) {
	e.record(ledger.Entry{Event: ledger.EventTaskCompleted, TaskRunID: runID, Attempt: attempt})
	e.log.Info().Ctx(ctx).Str("task_run_id", runID).Int("artifacts", artifacts).Bool("input_required", inputRequired).Msg("task completed")
	e.cfg.Metrics.taskEnded(true)
}

// writeKey is the key of the write of a report's artifact i.
func writeKey(reportID string, i int) string {
	return reportID + "." + strconv.Itoa(i)
}

// artifactWait bounds one try of an artifact's write.
const artifactWait = 2 * time.Minute

// storeArtifact writes one artifact of a finished run. A write the
// platform cannot take right now (down, restarting, out of reach) is tried
// once more after a second, as a report is (seed 001 §4.6); then its error
// says so (platformUnreachable) and the completion waits in the outbox. An
// answer that will not change when asked again (the run is no longer this
// runtime's, the artifact is refused) is returned at once.
func (e *Engine) storeArtifact(ctx context.Context, run *mesh.TaskRun, a ArtifactContent, name string) (map[string]any, error) {
	var err error
	for try := 0; try < 2; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return nil, err
			case <-time.After(time.Second):
			}
		}
		actx, cancel := context.WithTimeout(ctx, artifactWait)
		var ref map[string]any
		ref, err = e.cfg.Artifacts.Write(actx, run.ID, run.Attempt, a)
		cancel()
		if err == nil || !platformUnreachable(err) {
			return ref, err
		}
		e.log.Warn().Err(err).Str("task_run_id", run.ID).Str("artifact", name).Int("try", try+1).
			Msg("the platform cannot take an artifact right now")
	}
	return nil, err
}

// platformUnreachable reports whether a request failed because the
// platform could not take it right now, so that the same request may
// succeed later: it is down or restarting, out of reach, or busy.
func platformUnreachable(err error) bool {
	var e *mesh.Error
	if errors.As(err, &e) {
		return errors.Is(err, mesh.ErrUnavailable) || errors.Is(err, mesh.ErrTimeout) || errors.Is(err, mesh.ErrRateLimited)
	}
	var ne net.Error
	return bus.Transient(err) || errors.As(err, &ne)
}

func describe(w adapterapi.ArtifactWrite, i int) string {
	if w.Filename != "" {
		return w.Filename
	}
	return "#" + strconv.Itoa(i+1)
}

// cleanOutput applies seed 000 steps 3-4: the artifact write requests and
// every content_text leave the output, and artifact_ref parts are appended to
// output.parts.
func cleanOutput(output map[string]any, refs []map[string]any) map[string]any {
	delete(output, "artifacts")
	delete(output, "artifact_writes")
	stripContentText(output)
	if len(refs) > 0 {
		parts, _ := output["parts"].([]any)
		for _, r := range refs {
			parts = append(parts, r)
		}
		output["parts"] = parts
	}
	return output
}

func stripContentText(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "content_text")
		for _, child := range x {
			stripContentText(child)
		}
	case []any:
		for _, child := range x {
			stripContentText(child)
		}
	}
}

// progressSender reports progress in order without holding up the task: a
// slow platform drops progress (it is non-fatal, seed 001 §4.4), never the task.
type progressSender struct {
	c    *Engine
	run  *mesh.TaskRun
	ch   chan meshapi.ProgressRequest
	done chan struct{}
}

func newProgressSender(c *Engine, run *mesh.TaskRun) *progressSender {
	p := &progressSender{c: c, run: run, ch: make(chan meshapi.ProgressRequest, 32), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *progressSender) send(message string, percent *float64) {
	select {
	case p.ch <- meshapi.ProgressRequest{TaskRunID: p.run.ID, Attempt: p.run.Attempt, Message: message, Percent: percent}:
	default:
	}
}

func (p *progressSender) loop() {
	defer close(p.done)
	for req := range p.ch {
		ctx, cancel := context.WithTimeout(p.c.execCtx, 5*time.Second)
		if err := p.c.cfg.Transport.Progress(ctx, req); err != nil {
			p.c.log.Debug().Err(err).Str("task_run_id", req.TaskRunID).Msg("progress not reported")
		}
		cancel()
	}
}

// close waits until queued progress is sent, so it precedes the result.
func (p *progressSender) close() {
	close(p.ch)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}
