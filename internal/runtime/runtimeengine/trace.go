package runtimeengine

import (
	"context"

	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/mesh"
	"go.opentelemetry.io/otel/trace"
)

var tracer = tracing.Tracer("runtime")

// startTask starts the span of the runtime's work on a claimed run, in the
// trace the claim's answer named (the platform's claim of the run, in the
// trace of the request that created it); a run that came without one
// starts a trace. The adapter call and the report are its children.
func startTask(ctx context.Context, run *mesh.TaskRun, runtimeID string) (context.Context, trace.Span) {
	ctx = tracing.WithTraceParent(ctx, run.TraceParent)
	return tracing.StartSpan(ctx, tracer, "runtime task run", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(tracing.AttrTaskRunID.String(run.ID), tracing.AttrAgentID.String(run.TargetAgentID),
			tracing.AttrRuntimeID.String(runtimeID), tracing.AttrAttempt.Int(run.Attempt)))
}
