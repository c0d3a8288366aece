package tracing

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Span attributes. Spans carry ids, codes and names, never a credential,
// an input, an output or an error message (which may quote either), nor a
// URL (a webhook's may hold a secret).
const (
	AttrTaskRunID   = attribute.Key("mesh.task_run.id")
	AttrAttempt     = attribute.Key("mesh.task_run.attempt")
	AttrAgentID     = attribute.Key("mesh.agent.id")
	AttrRuntimeID   = attribute.Key("mesh.runtime.id")
	AttrErrorCode   = attribute.Key("mesh.error.code")
	AttrEventType   = attribute.Key("mesh.event.type")
	AttrWebhookID   = attribute.Key("mesh.webhook.id")
	AttrPartnerID   = attribute.Key("mesh.partner.id")
	AttrProvider    = attribute.Key("mesh.adapter.provider")
	AttrBusSubject  = attribute.Key("messaging.destination.name")
	AttrBusSystem   = attribute.Key("messaging.system")
	AttrHTTPMethod  = attribute.Key("http.request.method")
	AttrHTTPRoute   = attribute.Key("http.route")
	AttrHTTPStatus  = attribute.Key("http.response.status_code")
	AttrServiceName = attribute.Key("mesh.service")
)

// Fail marks span failed with a short, fixed description: an error code or
// a status, never an error's message.
func Fail(span trace.Span, code string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(AttrErrorCode.String(code))
	span.SetStatus(codes.Error, code)
}

// StartHTTPServer starts the server span of an incoming request, in the
// trace its traceparent header names (or a new one), and returns the
// request carrying it. name is the span's name until EndHTTPServer
// renames it after the route.
func StartHTTPServer(r *http.Request, tracer trace.Tracer, name string) (*http.Request, trace.Span) {
	if tp := r.Header.Get(httpTraceParent); tp != "" {
		r = r.WithContext(WithTraceParent(r.Context(), tp))
	}
	if !Active() {
		return r, trace.SpanFromContext(r.Context())
	}
	ctx, span := tracer.Start(r.Context(), name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(AttrHTTPMethod.String(r.Method)))
	return r.WithContext(ctx), span
}

// EndHTTPServer ends a server span with the request's route (the pattern,
// never the path with its ids) and answer status; a 5xx answer marks it
// failed.
func EndHTTPServer(span trace.Span, method, route string, status int) {
	if !span.IsRecording() {
		return
	}
	if route != "" {
		span.SetName(method + " " + route)
		span.SetAttributes(AttrHTTPRoute.String(route))
	}
	span.SetAttributes(AttrHTTPStatus.Int(status))
	if status >= http.StatusInternalServerError {
		span.SetStatus(codes.Error, strconv.Itoa(status))
	}
	span.End()
}

// StartHTTPClient starts the client span of an outgoing request and returns
// the request carrying it, its trace context written into the headers.
func StartHTTPClient(req *http.Request, tracer trace.Tracer, name string, attrs ...attribute.KeyValue) (*http.Request, trace.Span) {
	if !Active() {
		Inject(req.Context(), req.Header)
		return req, trace.SpanFromContext(req.Context())
	}
	ctx, span := tracer.Start(req.Context(), name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(attrs, AttrHTTPMethod.String(req.Method))...))
	req = req.WithContext(ctx)
	Inject(ctx, req.Header)
	return req, span
}

// EndHTTPClient ends a client span with the answer's status, or marks it
// failed when no answer came (err not nil).
func EndHTTPClient(span trace.Span, resp *http.Response, err error) {
	if !span.IsRecording() {
		return
	}
	switch {
	case err != nil:
		Fail(span, "TRANSPORT_ERROR")
	case resp != nil:
		span.SetAttributes(AttrHTTPStatus.Int(resp.StatusCode))
		if resp.StatusCode >= http.StatusBadRequest {
			span.SetStatus(codes.Error, strconv.Itoa(resp.StatusCode))
		}
	}
	span.End()
}
