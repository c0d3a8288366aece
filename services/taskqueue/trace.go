package taskqueue

import (
	"context"
	"time"

	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/mesh"
	"go.opentelemetry.io/otel/trace"
)

var tracer = tracing.Tracer("taskqueue")

// traceClaim records a claim in the trace of the run's creation (the
// runtime's claim request is in no trace) and returns the run to answer
// the runtime with: its TraceParent is the claim's span, which the
// runtime's work on the run continues. The stored run is left as it is.
func traceClaim(run *mesh.TaskRun, began time.Time) *mesh.TaskRun {
	if !tracing.Active() {
		return run
	}
	ctx := tracing.WithTraceParent(context.Background(), run.TraceParent)
	if !tracing.InTrace(ctx) {
		return run
	}
	ctx, span := tracer.Start(ctx, "taskqueue claim", trace.WithTimestamp(began),
		trace.WithAttributes(tracing.AttrTaskRunID.String(run.ID), tracing.AttrAgentID.String(run.TargetAgentID),
			tracing.AttrRuntimeID.String(run.RuntimeID), tracing.AttrAttempt.Int(run.Attempt)))
	span.End()
	cp := *run
	cp.TraceParent = tracing.TraceParent(ctx)
	return &cp
}

// inRunTrace returns ctx in the trace of the run's creation when ctx is in
// none (a claim, the reaper, a repair), so every event about a run can be
// followed back to the request that created it.
func inRunTrace(ctx context.Context, run *mesh.TaskRun) context.Context {
	if tracing.InTrace(ctx) {
		return ctx
	}
	return tracing.WithTraceParent(ctx, run.TraceParent)
}
