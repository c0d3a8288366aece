package tracing

import (
	"compress/gzip"
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// recorder is a collector that answers with the statuses it is given, in
// turn (200 once they run out), and keeps each request.
type recorder struct {
	mu      sync.Mutex
	answers []int
	// hold has each request beyond answers wait, unanswered, until its
	// client gives up.
	hold     bool
	headers  []http.Header
	requests []*collectorpb.ExportTraceServiceRequest
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, _ := io.ReadAll(body)
	var msg collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &msg); err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP protobuf request", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	r.requests = append(r.requests, &msg)
	if len(r.answers) == 0 {
		hold := r.hold
		r.mu.Unlock()
		if hold {
			<-req.Context().Done()
		}
		return
	}
	code := r.answers[0]
	r.answers = r.answers[1:]
	r.mu.Unlock()
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	http.Error(w, "secret-free refusal", code)
}

func (r *recorder) got() ([]http.Header, []*collectorpb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...), append([]*collectorpb.ExportTraceServiceRequest(nil), r.requests...)
}

func exporterFor(t *testing.T, vars map[string]string) *otlpExporter {
	t.Helper()
	e, err := newOTLPExporter(Config{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

// endedSpans records spans through a provider that hands them over as
// they end.
func endedSpans(t *testing.T, record func(trace.Tracer)) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := &spanList{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(rec))
	record(tp.Tracer("mesh/test", trace.WithInstrumentationVersion("v1")))
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rec.spans
}

type spanList struct{ spans []sdktrace.ReadOnlySpan }

func (l *spanList) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	l.spans = append(l.spans, s...)
	return nil
}
func (l *spanList) Shutdown(context.Context) error { return nil }

// TestOTLPExporter_EncodesSpansAsTheOfficialMessages: what the collector
// decodes with the official OTLP types is the span as recorded: ids,
// parent, kind, times, attributes of every type, events, links, status.
func TestOTLPExporter_EncodesSpansAsTheOfficialMessages(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	e := exporterFor(t, map[string]string{EnvTracesEndpoint: srv.URL + "/v1/traces"})

	var parent, child trace.SpanContext
	spans := endedSpans(t, func(tr trace.Tracer) {
		ctx, p := tr.Start(context.Background(), "parent", trace.WithSpanKind(trace.SpanKindServer))
		_, c := tr.Start(ctx, "child", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithLinks(trace.Link{SpanContext: p.SpanContext(), Attributes: []attribute.KeyValue{attribute.String("why", "retry")}}),
			trace.WithAttributes(
				attribute.String("s", "x"), attribute.Int64("i", -7), attribute.Float64("f", 1.5), attribute.Bool("b", true),
				attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1, 2})))
		c.AddEvent("retried", trace.WithAttributes(attribute.Int("attempt", 2)))
		c.SetStatus(codes.Error, "RUNTIME_LOST")
		c.End()
		p.SetStatus(codes.Ok, "")
		p.End()
		parent, child = p.SpanContext(), c.SpanContext()
	})
	if err := e.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	_, reqs := rec.got()
	if len(reqs) != 1 || len(reqs[0].ResourceSpans) != 1 || len(reqs[0].ResourceSpans[0].ScopeSpans) != 1 {
		t.Fatalf("want one request with one resource and one scope, got %v", reqs)
	}
	scope := reqs[0].ResourceSpans[0].ScopeSpans[0]
	if scope.Scope.GetName() != "mesh/test" || scope.Scope.GetVersion() != "v1" || len(scope.Spans) != 2 {
		t.Fatalf("scope %v with %d spans", scope.Scope, len(scope.Spans))
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range scope.Spans {
		byName[s.Name] = s
	}
	c, p := byName["child"], byName["parent"]
	ctid, csid, psid := child.TraceID(), child.SpanID(), parent.SpanID()
	if string(c.TraceId) != string(ctid[:]) || string(c.SpanId) != string(csid[:]) || string(c.ParentSpanId) != string(psid[:]) {
		t.Errorf("child ids %x/%x parent %x, want %s/%s parent %s", c.TraceId, c.SpanId, c.ParentSpanId, ctid, csid, psid)
	}
	if len(p.ParentSpanId) != 0 || p.Kind != tracepb.Span_SPAN_KIND_SERVER || c.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("parent %x kind %v, child kind %v", p.ParentSpanId, p.Kind, c.Kind)
	}
	if c.StartTimeUnixNano == 0 || c.EndTimeUnixNano < c.StartTimeUnixNano {
		t.Errorf("child times %d..%d", c.StartTimeUnixNano, c.EndTimeUnixNano)
	}
	if c.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || c.Status.GetMessage() != "RUNTIME_LOST" || p.Status.GetCode() != tracepb.Status_STATUS_CODE_OK {
		t.Errorf("statuses child %v parent %v", c.Status, p.Status)
	}
	attrs := map[string]string{}
	for _, kv := range c.Attributes {
		attrs[kv.Key] = kv.Value.String()
	}
	for key, want := range map[string]string{"s": `string_value:"x"`, "i": "int_value:-7", "f": "double_value:1.5", "b": "bool_value:true"} {
		if got := strings.Join(strings.Fields(attrs[key]), ""); got != strings.Join(strings.Fields(want), "") {
			t.Errorf("attribute %s = %s, want %s", key, got, want)
		}
	}
	for _, key := range []string{"ss", "is"} {
		if !strings.Contains(attrs[key], "array_value") {
			t.Errorf("attribute %s = %s, want an array", key, attrs[key])
		}
	}
	if len(c.Events) != 1 || c.Events[0].Name != "retried" || c.Events[0].Attributes[0].Value.GetIntValue() != 2 {
		t.Errorf("events %v", c.Events)
	}
	if len(c.Links) != 1 || string(c.Links[0].SpanId) != string(psid[:]) || c.Links[0].Attributes[0].Key != "why" {
		t.Errorf("links %v", c.Links)
	}
	if c.Flags&uint32(tracepb.SpanFlags_SPAN_FLAGS_TRACE_FLAGS_MASK) != 1 || c.Flags&uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK) == 0 {
		t.Errorf("child flags %b: want sampled, remoteness known", c.Flags)
	}
}

// TestOTLPExporter_SendsTheConfiguredHeadersCompressed: headers are
// percent-decoded, the traces-only settings win, gzip is honoured.
func TestOTLPExporter_SendsTheConfiguredHeadersCompressed(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	e := exporterFor(t, map[string]string{
		EnvEndpoint:                         srv.URL,
		envHeaders:                          "x-general=1",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Bearer%20abc,x-tenant=east",
		envCompression:                      "gzip",
	})
	spans := endedSpans(t, func(tr trace.Tracer) { _, s := tr.Start(context.Background(), "one"); s.End() })
	if err := e.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	headers, reqs := rec.got()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	h := headers[0]
	if h.Get("Authorization") != "Bearer abc" || h.Get("X-Tenant") != "east" || h.Get("X-General") != "" || h.Get("Content-Encoding") != "gzip" {
		t.Errorf("headers %v", h)
	}
}

// TestOTLPExporter_RetriesWhatTheSpecificationCallsRetryable: a 503 with
// Retry-After is tried again and the spans arrive; a 400 is final and its
// error names the status but no header value.
func TestOTLPExporter_RetriesWhatTheSpecificationCallsRetryable(t *testing.T) {
	rec := &recorder{answers: []int{http.StatusServiceUnavailable}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	vars := map[string]string{EnvEndpoint: srv.URL, envHeaders: "authorization=topsecret"}
	e := exporterFor(t, vars)
	spans := endedSpans(t, func(tr trace.Tracer) { _, s := tr.Start(context.Background(), "one"); s.End() })
	if err := e.ExportSpans(context.Background(), spans); err != nil {
		t.Fatalf("after a 503: %v", err)
	}
	if _, reqs := rec.got(); len(reqs) != 2 {
		t.Fatalf("%d requests, want the refused one and its retry", len(reqs))
	}

	rec.mu.Lock()
	rec.answers = []int{http.StatusBadRequest}
	rec.mu.Unlock()
	err := e.ExportSpans(context.Background(), spans)
	if err == nil || !strings.Contains(err.Error(), "400") || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("err = %v: want the 400, without the header value", err)
	}
	if _, reqs := rec.got(); len(reqs) != 3 {
		t.Fatalf("%d requests: a 400 must not be retried", len(reqs))
	}
}

// TestOTLPExporter_GivesUpWithTheContext: while the collector refuses, an
// export ends when its context does, and says what the collector last
// answered, even when the context ends in the middle of a retry.
func TestOTLPExporter_GivesUpWithTheContext(t *testing.T) {
	rec := &recorder{answers: []int{http.StatusBadGateway}, hold: true}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	e := exporterFor(t, map[string]string{EnvEndpoint: srv.URL})
	spans := endedSpans(t, func(tr trace.Tracer) { _, s := tr.Start(context.Background(), "one"); s.End() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.ExportSpans(ctx, spans) }()
	// The second request is the retry after the refusal: it waits,
	// unanswered, when the context ends.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, reqs := rec.got(); len(reqs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the refused export was not retried")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "502") || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want the context's end and the last refusal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("export did not end with its context")
	}
}

// TestOTLPExporter_TrustsTheConfiguredCertificate: a collector with a
// private CA is refused until OTEL_EXPORTER_OTLP_CERTIFICATE names it.
func TestOTLPExporter_TrustsTheConfiguredCertificate(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewTLSServer(rec)
	defer srv.Close()
	spans := endedSpans(t, func(tr trace.Tracer) { _, s := tr.Start(context.Background(), "one"); s.End() })

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := exporterFor(t, map[string]string{EnvEndpoint: srv.URL}).ExportSpans(ctx, spans)
	if err == nil || strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("err = %v: want a certificate error that does not quote the URL", err)
	}

	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := exporterFor(t, map[string]string{EnvEndpoint: srv.URL, envCertificate: ca}).ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	if _, reqs := rec.got(); len(reqs) != 1 {
		t.Fatalf("%d requests reached the collector, want 1", len(reqs))
	}
}

// TestOTLPExporter_RefusesBadSettings: each names the setting at fault and
// never quotes a header value.
func TestOTLPExporter_RefusesBadSettings(t *testing.T) {
	for _, c := range []struct{ name, value, want string }{
		{envTimeout, "soon", envTimeout},
		{envCompression, "zstd", envCompression},
		{envHeaders, "authorization", envHeaders},
		{envHeaders, "authorization=%zzsecret", envHeaders},
		{envCertificate, "/nonexistent/ca.pem", envCertificate},
		{envClientCert, "/nonexistent/cert.pem", envClientCert},
	} {
		_, err := newOTLPExporter(Config{Getenv: func(k string) string {
			if k == c.name {
				return c.value
			}
			if k == EnvEndpoint {
				return "http://127.0.0.1:4318"
			}
			return ""
		}})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s=%s: err = %v", c.name, c.value, err)
		}
	}
}
