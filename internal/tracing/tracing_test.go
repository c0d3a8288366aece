package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/internal/tracing/tracingtest"
)

const callerTraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// TestStart_NothingConfiguredCreatesNoExporter: without an OTLP endpoint
// (or with the SDK disabled, or the exporter "none"), nothing is
// installed: the API's no-op provider stays, spans record nothing, and a
// collector that is listening receives nothing.
func TestStart_NothingConfiguredCreatesNoExporter(t *testing.T) {
	collector := tracingtest.NewCollector(t)
	for name, vars := range map[string]map[string]string{
		"no variables":  nil,
		"sdk disabled":  {tracing.EnvEndpoint: collector.Endpoint(), tracing.EnvSDKDisabled: "true"},
		"exporter none": {tracing.EnvEndpoint: collector.Endpoint(), tracing.EnvTracesExporter: "none"},
		"only a name":   {"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := tracing.Config{ServiceName: "test", Getenv: env(vars)}
			if cfg.Enabled() {
				t.Fatal("enabled with nothing to export to")
			}
			tr, err := tracing.Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Exporting() {
				t.Fatal("an exporter was created")
			}
			if _, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); ok {
				t.Fatal("an SDK tracer provider was installed")
			}
			_, span := tracing.Tracer("test").Start(context.Background(), "work")
			if span.IsRecording() || span.SpanContext().IsValid() {
				t.Fatal("a span was recorded")
			}
			span.End()
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
	if got := collector.Bodies(); len(got) != 0 {
		t.Fatalf("the collector received %d export requests", len(got))
	}
}

// TestStart_UnsupportedProtocolIsRefused: a protocol this build cannot
// speak is an error, not silence.
func TestStart_UnsupportedProtocolIsRefused(t *testing.T) {
	_, err := tracing.Start(context.Background(), tracing.Config{Getenv: env(map[string]string{
		tracing.EnvEndpoint: "http://127.0.0.1:4317", tracing.EnvProtocol: "grpc"})})
	if err == nil {
		t.Fatal("grpc was accepted")
	}
}

// TestNoop_CarriesTheCallersTraceOn: with tracing off, a span started in a
// caller's trace keeps the caller's trace context, so the traceparent
// reaches the next hop unchanged.
func TestNoop_CarriesTheCallersTraceOn(t *testing.T) {
	ctx := tracing.WithTraceParent(context.Background(), callerTraceParent)
	if got := tracing.TraceParent(ctx); got != callerTraceParent {
		t.Fatalf("traceparent %q, want %q", got, callerTraceParent)
	}
	ctx, span := tracing.Tracer("test").Start(ctx, "work")
	defer span.End()
	if got := tracing.TraceParent(ctx); got != callerTraceParent {
		t.Fatalf("traceparent in a no-op span %q, want %q", got, callerTraceParent)
	}
	later := "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-more"
	if got := tracing.TraceParent(tracing.WithTraceParent(context.Background(), later)); got != callerTraceParent {
		t.Fatalf("a later version is carried on as %q, want %q", got, callerTraceParent)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", callerTraceParent + "-extra",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0x"} {
		if tracing.InTrace(tracing.WithTraceParent(context.Background(), bad)) {
			t.Errorf("%q started a trace", bad)
		}
	}
}

// TestStart_ExportsSpansOverOTLPHTTP: with an endpoint, spans reach the
// collector on shutdown, named by the program's service name, continuing
// the caller's trace; an HTTP client span's traceparent header names it.
func TestStart_ExportsSpansOverOTLPHTTP(t *testing.T) {
	collector := tracingtest.NewCollector(t)
	tr, err := tracing.Start(context.Background(), tracing.Config{ServiceName: "a2a-test", Version: "v0",
		Getenv: env(map[string]string{tracing.EnvEndpoint: collector.Endpoint()}), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	// Later tests find the no-op provider again.
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	if !tr.Exporting() {
		t.Fatal("not exporting with an endpoint")
	}
	var seen string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get(tracing.HeaderTraceParent)
	}))
	defer target.Close()

	ctx := tracing.WithTraceParent(context.Background(), callerTraceParent)
	ctx, span := tracing.Tracer("test").Start(ctx, "work", trace.WithAttributes(tracing.AttrTaskRunID.String("run-1")))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target.URL, nil)
	req, client := tracing.StartHTTPClient(req, tracing.Tracer("test"), "call")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	tracing.EndHTTPClient(client, resp, err)
	span.End()

	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	spans := collector.Spans()
	if len(spans) != 2 {
		t.Fatalf("collector received %d spans, want 2: %+v", len(spans), spans)
	}
	byName := map[string]tracingtest.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	work, call := byName["work"], byName["call"]
	if work.Service != "a2a-test" || work.TraceID != "0af7651916cd43dd8448eb211c80319c" || work.ParentID != "b7ad6b7169203331" {
		t.Errorf("work span %+v: want service a2a-test in the caller's trace, child of its span", work)
	}
	if work.Attributes["mesh.task_run.id"] != "run-1" {
		t.Errorf("work span attributes %v", work.Attributes)
	}
	if call.ParentID != work.SpanID || call.Kind != "SPAN_KIND_CLIENT" || call.Attributes["http.response.status_code"] != "200" {
		t.Errorf("call span %+v: want a client span, child of work", call)
	}
	if want := "00-" + call.TraceID + "-" + call.SpanID + "-01"; seen != want {
		t.Errorf("request carried traceparent %q, want %q", seen, want)
	}
}
