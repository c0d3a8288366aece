package runtimeengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// deliver sends a complete or fail report, retrying once (seed 001 §4.6). If
// both tries fail for a reason that may pass, the report goes to the ledger's
// outbox and the outbox loop re-sends it until the platform answers. ctx is
// the task's: only its values (the task's span) are kept, not its end.
func (e *Engine) deliver(ctx context.Context, kind ledger.ReportKind, run *mesh.TaskRun, req any) {
	e.deliverAs(ctx, ledger.NewReportID(), kind, run, req)
}

// deliverAs is deliver of the report that has id in the outbox.
func (e *Engine) deliverAs(ctx context.Context, id string, kind ledger.ReportKind, run *mesh.TaskRun, req any) {
	var err error
	for try := 0; try < 2; try++ {
		if try > 0 {
			time.Sleep(time.Second)
		}
		err = e.send(ctx, kind, req)
		switch {
		case err == nil:
			return
		case IsAuthError(err):
			e.fail(err)
			return
		case isFinalAnswer(err):
			e.log.Warn().Ctx(ctx).Err(err).Str("task_run_id", run.ID).Msg("platform refused the report (the run ended otherwise)")
			e.record(ledger.Entry{Event: ledger.EventReportFailed, TaskRunID: run.ID, Attempt: run.Attempt, Message: err.Error()})
			return
		}
	}
	e.log.Warn().Ctx(ctx).Err(err).Str("task_run_id", run.ID).Msg("report not delivered; kept in the outbox for later")
	e.record(ledger.Entry{Event: ledger.EventReportFailed, TaskRunID: run.ID, Attempt: run.Attempt, Message: err.Error()})
	body, _ := json.Marshal(req)
	rep := ledger.Report{ID: id, Kind: kind, TaskRunID: run.ID, Attempt: run.Attempt, Body: body}
	if e.cfg.Ledger == nil {
		return
	}
	if err := e.cfg.Ledger.AppendPending(rep); err != nil {
		e.log.Error().Ctx(ctx).Err(err).Str("task_run_id", run.ID).Msg("report could not be kept in the outbox")
		return
	}
	e.kept(run.ID)
}

// kept has the outbox send a report just kept, and the run's lease renewed
// until then.
func (e *Engine) kept(runID string) {
	e.owe(true, runID)
	select {
	case e.outboxKick <- struct{}{}:
	default:
	}
}

// keepCompletion keeps a completion whose artifacts the platform cannot
// take now (cause) in the outbox, with them: those stored (refs, in the
// order of writes) by their refs, the others with their content, and the
// output without refs (they are added when it is sent). A completion that
// cannot be kept fails the run, as an artifact that cannot be stored does.
func (e *Engine) keepCompletion(ctx context.Context, run *mesh.TaskRun, id string, output map[string]any, inputRequired bool,
	writes []adapterapi.ArtifactWrite, refs []map[string]any, cause error) {
	rep, contents, err := completionReport(run, id, output, inputRequired, writes, refs)
	if err == nil {
		err = e.cfg.Ledger.AppendPending(rep, contents...)
	}
	name := describe(writes[len(refs)], len(refs))
	if err != nil {
		e.failRun(ctx, run, mesh.ReasonArtifactWriteFailed, "artifact "+name+" could not be stored ("+cause.Error()+") nor kept for later: "+err.Error())
		return
	}
	e.log.Warn().Ctx(ctx).Err(cause).Str("task_run_id", run.ID).Str("artifact", name).Int("artifacts", len(writes)).
		Msg("the platform cannot take the run's artifacts now; the completion is kept in the outbox with them")
	e.record(ledger.Entry{Event: ledger.EventReportFailed, TaskRunID: run.ID, Attempt: run.Attempt, Message: "artifact " + name + ": " + cause.Error()})
	e.kept(run.ID)
}

// completionReport is the outbox report of a completion with artifacts,
// and the content of those not stored.
func completionReport(run *mesh.TaskRun, id string, output map[string]any, inputRequired bool,
	writes []adapterapi.ArtifactWrite, refs []map[string]any) (ledger.Report, [][]byte, error) {
	out, err := json.Marshal(output)
	if err != nil {
		return ledger.Report{}, nil, fmt.Errorf("output cannot be encoded: %w", err)
	}
	body, err := json.Marshal(meshapi.CompleteRequest{TaskRunID: run.ID, Attempt: run.Attempt, Output: out, InputRequired: inputRequired})
	if err != nil {
		return ledger.Report{}, nil, err
	}
	rep := ledger.Report{ID: id, Kind: ledger.ReportComplete, TaskRunID: run.ID, Attempt: run.Attempt, Body: body}
	contents := make([][]byte, len(writes))
	for i, w := range writes {
		kept := ledger.KeptArtifact{Index: i}
		if kept.Write, err = json.Marshal(describeOnly(w)); err != nil {
			return ledger.Report{}, nil, err
		}
		if i < len(refs) {
			if kept.Ref, err = json.Marshal(refs[i]); err != nil {
				return ledger.Report{}, nil, err
			}
		} else if contents[i], err = content(w); err != nil {
			return ledger.Report{}, nil, fmt.Errorf("artifact %s: %w", describe(w, i), err)
		}
		rep.Artifacts = append(rep.Artifacts, kept)
	}
	return rep, contents, nil
}

// send sends one report within ctx's trace; ctx's end does not stop it.
func (e *Engine) send(ctx context.Context, kind ledger.ReportKind, req any) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	switch r := req.(type) {
	case meshapi.CompleteRequest:
		return e.cfg.Transport.Complete(ctx, r)
	case meshapi.FailRequest:
		return e.cfg.Transport.Fail(ctx, r)
	}
	return fmt.Errorf("unknown report %s", kind)
}

// outboxLoop re-sends kept reports: at start (reports left by an earlier
// process), when a report is added, and every few seconds while any remain.
func (e *Engine) outboxLoop(ctx context.Context) {
	if e.cfg.Ledger == nil {
		return
	}
	if err := e.cfg.Ledger.PruneKept(); err != nil {
		e.log.Warn().Err(err).Msg("artifacts kept for reports no longer pending not removed")
	}
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.outboxKick:
		case <-time.After(wait):
		}
		remaining := e.flushOutbox()
		if remaining == 0 {
			wait = time.Hour
		} else {
			wait = 3 * time.Second
		}
	}
}

// flushOutbox sends every pending report once and returns how many remain.
func (e *Engine) flushOutbox() int {
	pending, err := e.cfg.Ledger.Pending()
	if err != nil {
		e.log.Warn().Err(err).Msg("outbox unreadable")
		return 1
	}
	remaining := 0
	for _, rep := range pending {
		// Reports left by an earlier process are owed by this one.
		e.owe(true, rep.TaskRunID)
		switch e.flushReport(rep) {
		case flushStop:
			return len(pending)
		case flushRemains:
			remaining++
		}
	}
	return remaining
}

// What became of a kept report when it was sent.
type flushOutcome int

const (
	flushSettled flushOutcome = iota // delivered or abandoned
	flushRemains                     // to send again later
	flushStop                        // the credential was refused
)

// flushReport sends one kept report: a completion's artifacts first, then
// the report.
func (e *Engine) flushReport(rep ledger.Report) flushOutcome {
	req, err := decodeReport(rep)
	if err != nil {
		e.settle(rep, err)
		return flushSettled
	}
	if len(rep.Artifacts) > 0 {
		complete, ok := req.(meshapi.CompleteRequest)
		if !ok {
			e.settle(rep, fmt.Errorf("a %s report stores no artifacts", rep.Kind))
			return flushSettled
		}
		req, err = e.storeKept(rep, complete)
	}
	if err == nil {
		err = e.send(e.execCtx, rep.Kind, req)
	}
	var refused *refusedArtifact
	switch {
	case err == nil:
		_ = e.cfg.Ledger.MarkDelivered(rep.ID)
		e.owe(false, rep.TaskRunID)
		if len(rep.Artifacts) > 0 {
			e.completed(e.execCtx, rep.TaskRunID, rep.Attempt, len(rep.Artifacts), req.(meshapi.CompleteRequest).InputRequired)
		}
		e.log.Info().Str("task_run_id", rep.TaskRunID).Msg("kept report delivered")
	case IsAuthError(err):
		e.fail(err)
		return flushStop
	case errors.As(err, &refused):
		return e.failKept(rep, refused)
	case isFinalAnswer(err):
		e.settle(rep, err)
		e.log.Warn().Err(err).Str("task_run_id", rep.TaskRunID).Msg("kept report refused: the run ended otherwise")
	default:
		return flushRemains
	}
	return flushSettled
}

// settle abandons a kept report the platform will never take.
func (e *Engine) settle(rep ledger.Report, cause error) {
	_ = e.cfg.Ledger.MarkAbandoned(rep.ID, cause.Error())
	e.owe(false, rep.TaskRunID)
}

// refusedArtifact is a kept artifact the platform refused with an answer
// that will not change (too large, the run no longer this runtime's), or
// whose kept content is gone.
type refusedArtifact struct {
	name string
	err  error
}

func (r *refusedArtifact) Error() string {
	return "artifact " + r.name + " could not be stored: " + r.err.Error()
}

func (r *refusedArtifact) Unwrap() error { return r.err }

// storeKept stores the artifacts of a kept completion the platform has not
// yet stored, each noted in the ledger once stored (a retry skips it; one
// stored whose note was not written is found again by its write key), and
// returns the completion with the refs of all of them. An error is the
// first write that failed: a *refusedArtifact when asking again will not
// help.
func (e *Engine) storeKept(rep ledger.Report, req meshapi.CompleteRequest) (meshapi.CompleteRequest, error) {
	refs := make([]json.RawMessage, len(rep.Artifacts))
	for i, kept := range rep.Artifacts {
		if kept.Ref != nil {
			refs[i] = kept.Ref
			continue
		}
		var w adapterapi.ArtifactWrite
		if err := json.Unmarshal(kept.Write, &w); err != nil {
			return req, &refusedArtifact{name: describe(w, i), err: err}
		}
		name := describe(w, i)
		body, err := e.cfg.Ledger.KeptContent(rep.ID, i)
		if err != nil {
			return req, &refusedArtifact{name: name, err: err}
		}
		ctx, cancel := context.WithTimeout(e.execCtx, artifactWait)
		ref, err := e.cfg.Artifacts.Write(ctx, rep.TaskRunID, rep.Attempt, ArtifactContent{Write: w, Content: body, Key: writeKey(rep.ID, i)})
		cancel()
		switch {
		case err == nil:
		case IsAuthError(err), platformUnreachable(err):
			return req, err
		default:
			return req, &refusedArtifact{name: name, err: err}
		}
		if refs[i], err = json.Marshal(ref); err != nil {
			return req, &refusedArtifact{name: name, err: err}
		}
		if err := e.cfg.Ledger.MarkArtifactWritten(rep.ID, i, refs[i]); err != nil {
			e.log.Warn().Err(err).Str("task_run_id", rep.TaskRunID).Str("artifact", name).Msg("stored artifact not noted in the outbox; its write key finds it again")
		}
		e.record(ledger.Entry{Event: ledger.EventArtifactWritten, TaskRunID: rep.TaskRunID, Attempt: rep.Attempt, Message: w.Filename})
	}
	out, err := withRefs(req.Output, refs)
	if err != nil {
		return req, &refusedArtifact{name: "refs", err: err}
	}
	req.Output = out
	return req, nil
}

// withRefs appends the artifact_ref parts to output.parts (seed 000 step
// 4), leaving the rest of the output byte for byte.
func withRefs(output json.RawMessage, refs []json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(output, &fields); err != nil {
		return nil, fmt.Errorf("kept output: %w", err)
	}
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	var parts []json.RawMessage
	if raw, ok := fields["parts"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &parts); err != nil {
			return nil, fmt.Errorf("kept output.parts: %w", err)
		}
	}
	b, err := json.Marshal(append(parts, refs...))
	if err != nil {
		return nil, err
	}
	fields["parts"] = b
	return json.Marshal(fields)
}

// failKept reports a kept completion's run failed because the platform
// refused one of its artifacts, as a refusal at the first try does; the
// completion leaves the outbox once the failure is delivered (or refused).
func (e *Engine) failKept(rep ledger.Report, refused *refusedArtifact) flushOutcome {
	out, _ := json.Marshal(map[string]any{"error": refused.Error(), "code": mesh.ReasonArtifactWriteFailed})
	err := e.send(e.execCtx, ledger.ReportFail, meshapi.FailRequest{TaskRunID: rep.TaskRunID, Attempt: rep.Attempt, Output: out})
	switch {
	case err == nil, isFinalAnswer(err):
		e.record(ledger.Entry{Event: ledger.EventTaskFailed, TaskRunID: rep.TaskRunID, Attempt: rep.Attempt, ErrorCode: mesh.ReasonArtifactWriteFailed, Message: refused.Error()})
		e.settle(rep, refused)
		e.cfg.Metrics.taskEnded(false)
		e.log.Warn().Err(refused).Str("task_run_id", rep.TaskRunID).Msg("kept completion not delivered: the platform refused one of its artifacts; the run is reported failed")
		return flushSettled
	case IsAuthError(err):
		e.fail(err)
		return flushStop
	}
	return flushRemains
}

func decodeReport(rep ledger.Report) (any, error) {
	switch rep.Kind {
	case ledger.ReportComplete:
		var r meshapi.CompleteRequest
		return r, json.Unmarshal(rep.Body, &r)
	case ledger.ReportFail:
		var r meshapi.FailRequest
		return r, json.Unmarshal(rep.Body, &r)
	}
	return nil, fmt.Errorf("unknown report kind %q", rep.Kind)
}
