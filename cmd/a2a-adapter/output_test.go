package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/a2amesh/a2amesh/internal/logging"
	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/internal/tracing/tracingtest"
)

// jsonLines decodes every line of out, failing the test on one that is not
// a JSON object.
func jsonLines(t *testing.T, stream, out string) []map[string]any {
	t.Helper()
	var entries []map[string]any
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line == "" && out == "" {
			break
		}
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("a line of %s is not JSON (%v): %q", stream, err, line)
			continue
		}
		entries = append(entries, entry)
	}
	return entries
}

// TestAdapter_EveryLineItWritesIsJSON: a log collector reading the
// adapter's output gets JSON lines only, from its start to its stop, the
// address it listens on included (as fields of a log line).
func TestAdapter_EveryLineItWritesIsJSON(t *testing.T) {
	script := writeScript(t, "echo 'progress: 50% thinking' >&2\nprintf 'answer'\n")
	p := startAdapter(t, "--provider", "command", "--log-level", "debug", "--", script)
	if resp, raw := runTask(t, p.url, `{"task_run_id":"run-1","conversation_id":"conv-1","input":{"text":"hi"}}`, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("run-task: %d %s", resp.StatusCode, raw)
	}
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, p.stderr)
	}
	if out := p.stdout.String(); out != "" {
		jsonLines(t, "stdout", out)
	}
	var listening map[string]any
	for _, entry := range jsonLines(t, "stderr", p.stderr.String()) {
		if entry["url"] != nil {
			listening = entry
		}
	}
	if listening == nil || listening["url"] != p.url || listening["provider"] != "command" || listening["level"] != "info" ||
		!strings.Contains(fmt.Sprint(listening["message"]), "listening on "+p.url) {
		t.Fatalf("listening line %v, want url %s, provider command", listening, p.url)
	}
}

// TestAdapter_LogLinesOfATracedTaskCarryItsTraceID: with spans exported,
// the lines the adapter logs about a task carry the trace id and span id
// of the run-task span it exports, in the trace the runtime's traceparent
// named.
func TestAdapter_LogLinesOfATracedTaskCarryItsTraceID(t *testing.T) {
	collector := tracingtest.NewCollector(t)
	p := startAdapterEnv(t, []string{tracing.EnvEndpoint + "=" + collector.Endpoint(), "OTEL_BSP_SCHEDULE_DELAY=50"}, "--provider", "echo")
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, err := http.NewRequest(http.MethodPost, p.url+"/run-task", strings.NewReader(`{"task_run_id":"run-7","conversation_id":"conv-7","input":{"text":"hi"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(tracing.HeaderTraceParent, "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("run-task: %d", resp.StatusCode)
	}
	// The adapter flushes its spans as it stops.
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, p.stderr)
	}
	var span *tracingtest.Span
	for _, s := range collector.Spans() {
		if s.Name == "adapter run-task" {
			span = &s
		}
	}
	if span == nil || span.TraceID != traceID {
		t.Fatalf("run-task span %+v, want one in trace %s; spans: %+v", span, traceID, collector.Spans())
	}
	taskLines := 0
	for _, entry := range jsonLines(t, "stderr", p.stderr.String()) {
		if entry["task_run_id"] != "run-7" {
			if entry[logging.FieldTraceID] != nil {
				t.Errorf("a line outside the task carries a trace id: %v", entry)
			}
			continue
		}
		taskLines++
		if entry[logging.FieldTraceID] != span.TraceID || entry[logging.FieldSpanID] != span.SpanID {
			t.Errorf("task line %q: trace_id %v span_id %v, want the exported span's %s %s",
				entry["message"], entry[logging.FieldTraceID], entry[logging.FieldSpanID], span.TraceID, span.SpanID)
		}
	}
	if taskLines < 2 {
		t.Fatalf("%d log lines of the task, want its start and its end; stderr:\n%s", taskLines, p.stderr)
	}
}
