package tracing

import (
	"context"
	"encoding/hex"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// HeaderTraceParent is the W3C trace-context header, also the name of the
// CloudEvents extension that carries it on events.
const HeaderTraceParent = "traceparent"

// w3c is the propagator of every hop. It is used directly, not through the
// global one, so an incoming traceparent is carried on whether or not this
// process exports spans.
var w3c = propagation.TraceContext{}

// Tracer returns the tracer of one of the module's packages ("bus",
// "taskqueue", "runtime"...), from the process's tracer provider.
func Tracer(pkg string) trace.Tracer {
	return otel.Tracer("github.com/a2amesh/a2amesh/" + pkg)
}

// WithTraceParent returns ctx continuing the trace of tp, a W3C
// traceparent. An empty or malformed tp leaves ctx as it is.
func WithTraceParent(ctx context.Context, tp string) context.Context {
	sc, ok := parseTraceParent(tp)
	if !ok {
		return ctx
	}
	if tp[:2] != "00" {
		// A later version is carried on as version 00, its fields ignored.
		tp = "00" + tp[2:55]
	}
	return trace.ContextWithSpan(ctx, &remoteSpan{sc: sc, traceParent: tp})
}

// remoteSpan is a caller's span, as its traceparent named it. It keeps the
// text it was read from, so a process that only carries the trace on
// writes it again without formatting it.
type remoteSpan struct {
	noop.Span
	sc          trace.SpanContext
	traceParent string
}

// SpanContext is the caller's span context.
func (s *remoteSpan) SpanContext() trace.SpanContext { return s.sc }

// parseTraceParent reads a version-00 W3C traceparent
// ("00-<32 hex trace id>-<16 hex span id>-<2 hex flags>"); a later
// version's first four fields are read the same way, as the
// specification asks.
func parseTraceParent(tp string) (trace.SpanContext, bool) {
	if len(tp) < 55 || (len(tp) > 55 && (tp[:2] == "00" || tp[55] != '-')) || tp[:2] == "ff" ||
		tp[2] != '-' || tp[35] != '-' || tp[52] != '-' || !lowerHex(tp[:2]) {
		return trace.SpanContext{}, false
	}
	var cfg trace.SpanContextConfig
	var flags [1]byte
	if !decodeHex(cfg.TraceID[:], tp[3:35]) || !decodeHex(cfg.SpanID[:], tp[36:52]) || !decodeHex(flags[:], tp[53:55]) {
		return trace.SpanContext{}, false
	}
	cfg.TraceFlags = trace.TraceFlags(flags[0]) & trace.FlagsSampled
	cfg.Remote = true
	sc := trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}

func decodeHex(dst []byte, src string) bool {
	if !lowerHex(src) {
		return false
	}
	_, err := hex.Decode(dst, []byte(src))
	return err == nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// TraceParent returns the W3C traceparent of ctx's span (a span of this
// process or the remote caller's), or "" when ctx is in no trace.
func TraceParent(ctx context.Context) string {
	span := trace.SpanFromContext(ctx)
	if rs, ok := span.(*remoteSpan); ok {
		return rs.traceParent
	}
	sc := span.SpanContext()
	if !sc.IsValid() {
		return ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	var b [55]byte
	b[0], b[1], b[2] = '0', '0', '-'
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return string(b[:])
}

// InTrace reports whether ctx carries a trace context: hops that start no
// trace of their own (bus requests) make spans only then.
func InTrace(ctx context.Context) bool {
	return trace.SpanContextFromContext(ctx).IsValid()
}

// Inject writes ctx's trace context into the headers of an outgoing HTTP
// request (traceparent, and tracestate when there is one).
func Inject(ctx context.Context, h http.Header) {
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}

// httpTraceParent is HeaderTraceParent in the canonical form http.Header
// stores it under, which Get looks up without allocating.
const httpTraceParent = "Traceparent"

// HasTraceParent reports whether HTTP headers carry a traceparent.
func HasTraceParent(h http.Header) bool { return h.Get(httpTraceParent) != "" }

// Extract returns ctx continuing the trace an incoming HTTP request's
// headers name; without a valid traceparent ctx is returned as it is.
// (tracestate is not carried on.)
func Extract(ctx context.Context, h http.Header) context.Context {
	return WithTraceParent(ctx, h.Get(httpTraceParent))
}

// Active reports whether this process exports spans. When it does not,
// the helpers here make no spans of their own: they only carry a caller's
// trace context on, at no more cost than that.
func Active() bool { return active.Load() }

// active is set while a Tracing that exports is installed.
var active atomic.Bool

// StartSpan starts a span with tracer when spans are exported; otherwise
// it returns ctx and the span ctx already carries (which records nothing).
func StartSpan(ctx context.Context, tracer trace.Tracer, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !Active() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return tracer.Start(ctx, name, opts...)
}
