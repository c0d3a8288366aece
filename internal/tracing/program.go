package tracing

import (
	"context"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/logging"
	"github.com/a2amesh/a2amesh/internal/version"
)

// programShutdown is how long a program's deferred stop waits for its
// spans to be flushed.
const programShutdown = 5 * time.Second

// OpenProgram opens the log of one of the programs as logCfg says and
// starts its tracing as serviceName (see StartProgram). The caller defers
// stop, which flushes spans within five seconds, logging to the log
// returned here.
func OpenProgram(ctx context.Context, logCfg logging.Config, serviceName string) (log zerolog.Logger, stop func(), err error) {
	log, err = logging.New(logCfg)
	if err != nil {
		return log, nil, err
	}
	spans, err := StartProgram(ctx, serviceName, log)
	if err != nil {
		return log, nil, err
	}
	return log, func() { spans.ShutdownWithin(programShutdown, log) }, nil
}

// StartProgram sets up tracing for one of the programs (a2a-platform,
// a2a-runtime, a2a-adapter) from the process's OpenTelemetry environment,
// and says in the log when spans are exported. The caller defers the
// returned Tracing's ShutdownWithin, so spans are flushed on a graceful stop.
func StartProgram(ctx context.Context, serviceName string, log zerolog.Logger) (*Tracing, error) {
	t, err := Start(ctx, Config{ServiceName: serviceName, Version: version.String(), Getenv: os.Getenv, Logger: log})
	if err != nil {
		return nil, err
	}
	if t.Exporting() {
		log.Info().Str("service_name", serviceName).Msg("exporting spans over OTLP/HTTP")
	}
	return t, nil
}
