package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestLogs_LinesWithinASpanCarryItsTraceAndSpanIDs: a line logged with the
// context of a span (on the event or on the logger) carries the ids the
// span is exported with; a line outside any span carries none.
func TestLogs_LinesWithinASpanCarryItsTraceAndSpanIDs(t *testing.T) {
	exported := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exported))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })

	var out bytes.Buffer
	log, err := New(Config{Output: &out, Component: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := provider.Tracer("test").Start(context.Background(), "request")
	log.Info().Ctx(ctx).Msg("on the event")
	scoped := log.With().Ctx(ctx).Logger()
	scoped.Warn().Msg("on the logger")
	log.Info().Msg("outside")
	span.End()

	spans := exported.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("exported %d spans, want 1", len(spans))
	}
	wantTrace, wantSpan := spans[0].SpanContext.TraceID().String(), spans[0].SpanContext.SpanID().String()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("logged %d lines, want 3:\n%s", len(lines), out.String())
	}
	for i, line := range lines {
		var fields map[string]any
		if err := json.Unmarshal([]byte(line), &fields); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i, err, line)
		}
		if fields["message"] == "outside" {
			if _, ok := fields[FieldTraceID]; ok {
				t.Errorf("a line outside any span carries a trace id: %s", line)
			}
			continue
		}
		if fields[FieldTraceID] != wantTrace || fields[FieldSpanID] != wantSpan {
			t.Errorf("line %q: trace_id %v span_id %v, want the exported span's %s %s", fields["message"], fields[FieldTraceID], fields[FieldSpanID], wantTrace, wantSpan)
		}
	}
}
