// Package tracingtest is a fake OpenTelemetry collector for tests: an
// OTLP/HTTP (protobuf) traces endpoint on loopback that keeps every span
// it is sent.
package tracingtest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one span the collector received, flattened.
type Span struct {
	// Service is the service.name of the process that sent it.
	Service  string
	Name     string
	TraceID  string
	SpanID   string
	ParentID string
	// Kind is the OTLP span kind (SPAN_KIND_SERVER...).
	Kind string
	// Attributes are the span's attributes, each value as text.
	Attributes map[string]string
	// Status is the status code (STATUS_CODE_ERROR...) and its message.
	Status, StatusMessage string
}

// Collector receives spans over OTLP/HTTP.
type Collector struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []Span
	// bodies are the raw requests, for scans of everything that was sent.
	bodies [][]byte
}

// NewCollector starts a collector, stopped when t ends.
func NewCollector(t testing.TB) *Collector {
	c := &Collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

// Endpoint is the base URL, for OTEL_EXPORTER_OTLP_ENDPOINT.
func (c *Collector) Endpoint() string { return c.srv.URL }

// Spans returns the spans received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Bodies returns the export requests received so far, as sent.
func (c *Collector) Bodies() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.bodies...)
}

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.bodies = append(c.bodies, data)
	for _, rs := range req.GetResourceSpans() {
		service := attributes(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, Span{
					Service: service, Name: s.GetName(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Kind: s.GetKind().String(),
					Attributes: attributes(s.GetAttributes()),
					Status:     s.GetStatus().GetCode().String(), StatusMessage: s.GetStatus().GetMessage(),
				})
			}
		}
	}
	c.mu.Unlock()
	resp, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

func attributes(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case nil:
		return ""
	default:
		b, _ := proto.Marshal(v)
		return string(b)
	}
}
