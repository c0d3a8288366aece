package runtimeengine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// deliver sends a complete or fail report, retrying once (seed 001 §4.6). If
// both tries fail for a reason that may pass, the report goes to the ledger's
// outbox and the outbox loop re-sends it until the platform answers. ctx is
// the task's: only its values (the task's span) are kept, not its end.
func (e *Engine) deliver(ctx context.Context, kind ledger.ReportKind, run *mesh.TaskRun, req any) {
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
	rep := ledger.Report{ID: ledger.NewReportID(), Kind: kind, TaskRunID: run.ID, Attempt: run.Attempt, Body: body}
	if e.cfg.Ledger == nil {
		return
	}
	if err := e.cfg.Ledger.AppendPending(rep); err != nil {
		e.log.Error().Ctx(ctx).Err(err).Str("task_run_id", run.ID).Msg("report could not be kept in the outbox")
		return
	}
	e.owe(true, run.ID)
	select {
	case e.outboxKick <- struct{}{}:
	default:
	}
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
		req, err := decodeReport(rep)
		if err != nil {
			_ = e.cfg.Ledger.MarkAbandoned(rep.ID, err.Error())
			e.owe(false, rep.TaskRunID)
			continue
		}
		err = e.send(e.execCtx, rep.Kind, req)
		switch {
		case err == nil:
			_ = e.cfg.Ledger.MarkDelivered(rep.ID)
			e.owe(false, rep.TaskRunID)
			e.log.Info().Str("task_run_id", rep.TaskRunID).Msg("kept report delivered")
		case IsAuthError(err):
			e.fail(err)
			return len(pending)
		case isFinalAnswer(err):
			_ = e.cfg.Ledger.MarkAbandoned(rep.ID, err.Error())
			e.owe(false, rep.TaskRunID)
			e.log.Warn().Err(err).Str("task_run_id", rep.TaskRunID).Msg("kept report refused: the run ended otherwise")
		default:
			remaining++
		}
	}
	return remaining
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
