// Package logging builds the zerolog loggers of the three programs: JSON lines
// by default, a human-readable console when writing to a terminal.
//
// A line logged with a context (zerolog's Event.Ctx, or a logger made with
// With().Ctx) that carries an OpenTelemetry span carries that span's
// trace_id and span_id, so a request's or a run's log lines are found from
// its trace and the other way round.
package logging

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
)

// Fields a line logged within a trace carries: the W3C trace id (32 hex
// digits) and span id (16), as the OpenTelemetry log data model names them.
const (
	FieldTraceID = "trace_id"
	FieldSpanID  = "span_id"
)

// Config configures a logger.
type Config struct {
	// Level is trace, debug, info, warn or error. Default info.
	Level string
	// Output defaults to stderr.
	Output io.Writer
	// Console forces the console format; by default it is used when Output is
	// a terminal.
	Console bool
	// Component is added to every line as "component".
	Component string
}

// New returns a logger for cfg.
func New(cfg Config) (zerolog.Logger, error) {
	out := cfg.Output
	if out == nil {
		out = os.Stderr
	}
	level := zerolog.InfoLevel
	if cfg.Level != "" {
		l, err := zerolog.ParseLevel(strings.ToLower(cfg.Level))
		if err != nil || l == zerolog.NoLevel {
			return zerolog.Nop(), fmt.Errorf("unknown log level %q (use trace, debug, info, warn or error)", cfg.Level)
		}
		level = l
	}
	if cfg.Console || isTerminal(out) {
		out = zerolog.ConsoleWriter{Out: out, TimeFormat: time.TimeOnly}
	}
	logger := zerolog.New(out).Level(level).Hook(traceHook{}).With().Timestamp().Logger()
	if cfg.Component != "" {
		logger = logger.With().Str("component", cfg.Component).Logger()
	}
	return logger, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// traceHook adds the trace and span ids of the span in a line's context.
type traceHook struct{}

func (traceHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	sc := trace.SpanContextFromContext(e.GetCtx())
	if !sc.IsValid() {
		return
	}
	e.Str(FieldTraceID, sc.TraceID().String()).Str(FieldSpanID, sc.SpanID().String())
}
