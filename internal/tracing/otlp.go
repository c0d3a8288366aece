package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The exporter below speaks OTLP/HTTP with protobuf bodies, as the official
// otlptracehttp exporter does, but links no gRPC: that exporter's shared
// configuration package imports google.golang.org/grpc (upstream issue
// open-telemetry/opentelemetry-go#2579), which added about 10 MB to every
// program and 4.4 MB to the runtime's resident memory on users' machines.
// It uses the official OTLP message types, so the encoding is theirs.

// Exporter settings read from the environment, as the OTLP exporter
// specification names them; each has a traces-only form that wins.
const (
	envHeaders     = "OTEL_EXPORTER_OTLP_HEADERS"
	envTimeout     = "OTEL_EXPORTER_OTLP_TIMEOUT"
	envCompression = "OTEL_EXPORTER_OTLP_COMPRESSION"
	envCertificate = "OTEL_EXPORTER_OTLP_CERTIFICATE"
	envClientCert  = "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"
	envClientKey   = "OTEL_EXPORTER_OTLP_CLIENT_KEY"
)

// Defaults of the OTLP exporter specification, and the retry bounds of the
// official exporter.
const (
	defaultExportTimeout = 10 * time.Second
	retryFirst           = time.Second
	retryMax             = 30 * time.Second
	retryElapsed         = time.Minute
	// maxErrorBody is how much of a refusal's body an error quotes.
	maxErrorBody = 256
)

// tracesSetting returns the traces-only form of an exporter setting when
// it is set, else the general one.
func (c Config) tracesSetting(general string) string {
	if v := c.getenv(strings.Replace(general, "OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_TRACES_", 1)); v != "" {
		return v
	}
	return c.getenv(general)
}

// otlpExporter sends spans to an OTLP/HTTP traces endpoint.
type otlpExporter struct {
	url      string
	headers  http.Header
	timeout  time.Duration
	gzip     bool
	client   *http.Client
	stopOnce sync.Once
	stopped  chan struct{}
}

// newOTLPExporter builds the exporter cfg describes. Its errors name the
// setting at fault and never quote a header value.
func newOTLPExporter(cfg Config) (*otlpExporter, error) {
	headers, err := parseHeaders(cfg.tracesSetting(envHeaders))
	if err != nil {
		return nil, err
	}
	e := &otlpExporter{url: cfg.tracesURL(), headers: headers, timeout: defaultExportTimeout, stopped: make(chan struct{})}
	if v := cfg.tracesSetting(envTimeout); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s=%q: want a positive number of milliseconds", envTimeout, v)
		}
		e.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v := strings.ToLower(cfg.tracesSetting(envCompression)); v {
	case "", "none":
	case "gzip":
		e.gzip = true
	default:
		return nil, fmt.Errorf("%s=%q: want gzip or none", envCompression, v)
	}
	tlsConfig, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	e.client = &http.Client{Transport: transport}
	return e, nil
}

// parseHeaders reads "key1=value1,key2=value2" with percent-encoded
// values (W3C baggage syntax, as the specification says).
func parseHeaders(s string) (http.Header, error) {
	h := http.Header{}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: an entry is not key=value", envHeaders)
		}
		value, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%s: the value of %s is not percent-encoded correctly", envHeaders, k)
		}
		h.Add(k, value)
	}
	return h, nil
}

// tlsConfig is nil unless a CA or a client certificate is configured.
func (c Config) tlsConfig() (*tls.Config, error) {
	caFile := c.tracesSetting(envCertificate)
	certFile, keyFile := c.tracesSetting(envClientCert), c.tracesSetting(envClientKey)
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", envCertificate, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in %s", envCertificate, caFile)
		}
		cfg.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return nil, fmt.Errorf("%s and %s go together", envClientCert, envClientKey)
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", envClientCert, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// ExportSpans sends spans in one request, retrying what the specification
// calls retryable (429, 502, 503, 504, or no answer) with backoff and the
// collector's Retry-After, within ctx and a minute.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := e.encode(spans)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(retryElapsed)
	wait := retryFirst
	// last is the failure of the try before: an export whose context
	// ends in the middle of a retry says why it was retrying, not only
	// that it gave up.
	var last error
	for {
		retryAfter, err := e.send(ctx, body)
		if err == nil || retryAfter < 0 {
			return err
		}
		if ctx.Err() != nil && last != nil {
			return fmt.Errorf("%w, after: %w", err, last)
		}
		last = err
		if retryAfter == 0 {
			retryAfter = wait
			wait = min(2*wait, retryMax)
		}
		if time.Now().Add(retryAfter).After(deadline) {
			return err
		}
		t := time.NewTimer(retryAfter)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		case <-e.stopped:
			t.Stop()
			return err
		}
	}
}

// encode builds the ExportTraceServiceRequest body: its one field (1) is
// the repeated ResourceSpans, written with the official message types and
// the protobuf wire format, so the collector service's package (which
// links gRPC) is not needed.
func (e *otlpExporter) encode(spans []sdktrace.ReadOnlySpan) ([]byte, error) {
	var body []byte
	for _, rs := range resourceSpans(spans) {
		b, err := proto.Marshal(rs)
		if err != nil {
			return nil, fmt.Errorf("encode spans: %w", err)
		}
		body = protowire.AppendTag(body, 1, protowire.BytesType)
		body = protowire.AppendBytes(body, b)
	}
	if !e.gzip {
		return body, nil
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// send makes one attempt. retryAfter is negative when the error is final,
// zero when the attempt may be repeated after the usual backoff, and the
// collector's delay when it named one.
func (e *otlpExporter) send(ctx context.Context, body []byte) (retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("OTLP export: bad traces endpoint")
	}
	for k, v := range e.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		// The URL may hold credentials; the error says only what failed.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return 0, fmt.Errorf("OTLP export: %w", err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 == 2 {
		return 0, nil
	}
	err = fmt.Errorf("OTLP export: collector answered %s: %s", resp.Status, strings.TrimSpace(string(snippet)))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			return time.Duration(s) * time.Second, err
		}
		return 0, err
	}
	return -1, err
}

// Shutdown ends retries in progress; the batch processor has flushed by
// then.
func (e *otlpExporter) Shutdown(context.Context) error {
	e.stopOnce.Do(func() {
		close(e.stopped)
		e.client.CloseIdleConnections()
	})
	return nil
}

// resourceSpans groups spans by resource and instrumentation scope, in
// the order they came.
func resourceSpans(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	var out []*tracepb.ResourceSpans
	byResource := map[attribute.Distinct]*tracepb.ResourceSpans{}
	byScope := map[attribute.Distinct]map[string]*tracepb.ScopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		key := res.Equivalent()
		rs, ok := byResource[key]
		if !ok {
			rs = &tracepb.ResourceSpans{
				Resource:  &resourcepb.Resource{Attributes: keyValues(res.Attributes())},
				SchemaUrl: res.SchemaURL(),
			}
			byResource[key] = rs
			byScope[key] = map[string]*tracepb.ScopeSpans{}
			out = append(out, rs)
		}
		scope := s.InstrumentationScope()
		scopeKey := scope.Name + "\x00" + scope.Version + "\x00" + scope.SchemaURL
		ss, ok := byScope[key][scopeKey]
		if !ok {
			ss = &tracepb.ScopeSpans{
				Scope: &commonpb.InstrumentationScope{
					Name: scope.Name, Version: scope.Version,
					Attributes: keyValues(scope.Attributes.ToSlice()),
				},
				SchemaUrl: scope.SchemaURL,
			}
			byScope[key][scopeKey] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, span(s))
	}
	return out
}

func span(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc, parent := s.SpanContext(), s.Parent()
	tid, sid := sc.TraceID(), sc.SpanID()
	out := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Name:                   s.Name(),
		Kind:                   tracepb.Span_SpanKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             keyValues(s.Attributes()),
		DroppedAttributesCount: uint32(max(s.DroppedAttributes(), 0)),
		DroppedEventsCount:     uint32(max(s.DroppedEvents(), 0)),
		DroppedLinksCount:      uint32(max(s.DroppedLinks(), 0)),
		Status:                 status(s.Status()),
		Flags:                  spanFlags(sc.TraceFlags(), parent),
	}
	if parent.SpanID().IsValid() {
		pid := parent.SpanID()
		out.ParentSpanId = pid[:]
	}
	for _, ev := range s.Events() {
		out.Events = append(out.Events, &tracepb.Span_Event{
			TimeUnixNano:           unixNano(ev.Time),
			Name:                   ev.Name,
			Attributes:             keyValues(ev.Attributes),
			DroppedAttributesCount: uint32(max(ev.DroppedAttributeCount, 0)),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		out.Links = append(out.Links, &tracepb.Span_Link{
			TraceId:                ltid[:],
			SpanId:                 lsid[:],
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             keyValues(l.Attributes),
			DroppedAttributesCount: uint32(max(l.DroppedAttributeCount, 0)),
			Flags:                  spanFlags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	return out
}

// spanFlags holds the W3C trace flags and says whether the parent (or the
// linked span) is remote, as OTLP's SpanFlags define.
func spanFlags(tf trace.TraceFlags, other trace.SpanContext) uint32 {
	flags := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if other.IsRemote() {
		flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return flags
}

// status maps the API's codes, whose numbering differs from OTLP's (the
// API has Error=1, Ok=2; OTLP has OK=1, ERROR=2).
func status(s sdktrace.Status) *tracepb.Status {
	code := tracepb.Status_STATUS_CODE_UNSET
	switch s.Code {
	case codes.Ok:
		code = tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		code = tracepb.Status_STATUS_CODE_ERROR
	}
	return &tracepb.Status{Code: code, Message: s.Description}
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(max(t.UnixNano(), 0))
}

func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		return arrayOf(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return arrayOf(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return arrayOf(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return arrayOf(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return arrayOf(v.AsSlice(), func(x attribute.Value) attribute.Value { return x })
	case attribute.MAP:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: keyValues(v.AsMap())}}}
	}
	return &commonpb.AnyValue{}
}

func arrayOf[T any](xs []T, value func(T) attribute.Value) *commonpb.AnyValue {
	values := make([]*commonpb.AnyValue, 0, len(xs))
	for _, x := range xs {
		values = append(values, anyValue(value(x)))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: values}}}
}
