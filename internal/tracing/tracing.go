// Package tracing sets up OpenTelemetry tracing for the platform, the
// runtime and the adapter alike, and carries W3C trace context across the
// hops of a task run (HTTP requests, bus requests, stored runs, events).
//
// Spans are exported over OTLP/HTTP (protobuf) when the standard
// OpenTelemetry environment names an endpoint; otherwise nothing is
// exported and no exporter exists: spans are the API's no-op spans, which
// only carry an incoming trace context on to the next hop.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Environment variables that decide whether spans are exported. The
// exporter's settings (headers, timeout, compression, certificates) are
// read through Config.Getenv too; the SDK reads the sampler, batching and
// resource attributes from the process's environment itself.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// Config says whether and how a program exports spans.
type Config struct {
	// ServiceName is the program's service.name (a2a-platform,
	// a2a-runtime, a2a-adapter); OTEL_SERVICE_NAME overrides it.
	ServiceName string
	// Version is the program's service.version.
	Version string
	// Getenv reads the variables that decide whether and where spans go
	// and the exporter's settings (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
	// _COMPRESSION, _CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY and
	// their _TRACES_ forms); os.Getenv in the programs. Nil reads none:
	// tracing stays off. The sampler and the batching are read by the SDK
	// from the process's environment.
	Getenv func(string) string
	// Logger receives export failures (at most one line a minute).
	Logger zerolog.Logger
}

func (c Config) getenv(name string) string {
	if c.Getenv == nil {
		return ""
	}
	return strings.TrimSpace(c.Getenv(name))
}

// Enabled reports whether c asks for spans to be exported: an OTLP
// endpoint is named, the SDK is not disabled and the traces exporter is
// not "none".
func (c Config) Enabled() bool {
	if strings.EqualFold(c.getenv(EnvSDKDisabled), "true") || strings.EqualFold(c.getenv(EnvTracesExporter), "none") {
		return false
	}
	return c.getenv(EnvTracesEndpoint) != "" || c.getenv(EnvEndpoint) != ""
}

// tracesURL is where spans are sent: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// as it is, else OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended (the
// OTLP/HTTP rule for the base endpoint).
func (c Config) tracesURL() string {
	if u := c.getenv(EnvTracesEndpoint); u != "" {
		return u
	}
	return strings.TrimRight(c.getenv(EnvEndpoint), "/") + "/v1/traces"
}

// check refuses settings this build cannot honour, so an operator is told
// instead of seeing no spans.
func (c Config) check() error {
	if e := c.getenv(EnvTracesExporter); e != "" && !strings.EqualFold(e, "otlp") {
		return fmt.Errorf("%s=%s: only otlp (or none) is supported", EnvTracesExporter, e)
	}
	for _, name := range []string{EnvTracesProtocol, EnvProtocol} {
		if p := c.getenv(name); p != "" {
			if p != "http/protobuf" {
				return fmt.Errorf("%s=%s: only http/protobuf is supported", name, p)
			}
			break
		}
	}
	return nil
}

// Tracing is a program's tracer provider. Its zero value, and what Start
// returns when nothing is configured, exports nothing.
type Tracing struct {
	provider *sdktrace.TracerProvider
}

// Start sets up tracing as cfg says and installs it as the process's
// tracer provider and W3C trace-context propagator. With nothing
// configured it installs nothing: the OpenTelemetry API's no-op provider
// stays, and no exporter is created.
func Start(ctx context.Context, cfg Config) (*Tracing, error) {
	if !cfg.Enabled() {
		return &Tracing{}, nil
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	exporter, err := newOTLPExporter(cfg)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", cfg.ServiceName),
			attribute.String("service.version", cfg.Version),
		),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	// The sampler comes from OTEL_TRACES_SAMPLER (default: follow the
	// caller's decision, sample new traces).
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetErrorHandler(newErrorLog(cfg.Logger))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}))
	active.Store(true)
	return &Tracing{provider: provider}, nil
}

// Exporting reports whether spans are exported.
func (t *Tracing) Exporting() bool { return t != nil && t.provider != nil }

// Shutdown exports the spans still buffered and stops the exporter,
// within ctx. It does nothing when nothing is exported.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Exporting() {
		return nil
	}
	active.Store(false)
	if err := t.provider.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("flush spans: %w", err)
	}
	return nil
}

// ShutdownWithin is Shutdown bounded by timeout, logging what fails: for a
// program's deferred stop.
func (t *Tracing) ShutdownWithin(timeout time.Duration, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn().Err(err).Msg("spans not all exported")
	}
}

// errorLog logs the SDK's errors (an unreachable collector above all) at
// most once a minute, so a missing collector does not flood the log.
type errorLog struct {
	log  zerolog.Logger
	mu   sync.Mutex
	last time.Time
}

func newErrorLog(log zerolog.Logger) *errorLog { return &errorLog{log: log} }

func (e *errorLog) Handle(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if time.Since(e.last) < time.Minute {
		return
	}
	e.last = time.Now()
	e.log.Warn().Err(err).Msg("trace export failed (repeats are not logged for a minute)")
}
