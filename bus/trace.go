package bus

import (
	"context"
	"strings"

	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"go.opentelemetry.io/otel/trace"
)

var tracer = tracing.Tracer("bus")

// Service requests make spans only when spans are exported, and only
// within a trace (one an API request, a task run or an event started):
// runtimes' heartbeats, claims and renewals start none of their own.
// Otherwise a request only carries its caller's traceparent on.

// startCall starts the client span of a request sent within a trace. It
// returns a nil span outside one.
func startCall(ctx context.Context, subject string) (context.Context, trace.Span) {
	if !tracing.Active() || !tracing.InTrace(ctx) {
		return ctx, nil
	}
	return tracer.Start(ctx, spanName(subject), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(tracing.AttrBusSystem.String("nats"), tracing.AttrBusSubject.String(subject)))
}

// traced wraps an endpoint's handler in a server span, for requests that
// arrived within a trace (their traceparent header is in ctx already).
func traced(service, endpoint string, h HandlerFunc) HandlerFunc {
	name := service + " " + endpoint
	return func(ctx context.Context, req *Request) (resp any, err error) {
		if !tracing.Active() || !tracing.InTrace(ctx) {
			return h(ctx, req)
		}
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(tracing.AttrBusSystem.String("nats"), tracing.AttrBusSubject.String(req.Subject)))
		defer func() { endSpan(span, err) }()
		return h(ctx, req)
	}
}

// endSpan ends a request's span, marked failed with the error's code.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		tracing.Fail(span, string(mesh.AsError(err).Code))
	}
	span.End()
}

// spanName names the client span of a request after its service and
// operation ("call taskqueue create", "call runtime complete"), never
// after the ids a runtime subject holds. The handler's span is named
// without "call".
func spanName(subject string) string {
	if _, _, op, ok := ParseRuntimeSubject(subject); ok {
		return "call runtime " + op
	}
	if rest, ok := strings.CutPrefix(subject, subjService+"."); ok {
		return "call " + strings.Replace(rest, ".", " ", 1)
	}
	return "call"
}

// InEventTrace returns ctx continuing the trace of an event (its
// traceparent extension), for work an event causes: a webhook delivery.
func InEventTrace(ctx context.Context, e *event.Event) context.Context {
	tp, _ := types.ToString(e.Extensions()[tracing.HeaderTraceParent])
	return tracing.WithTraceParent(ctx, tp)
}
