package tracing

import (
	"context"
	"os"

	"github.com/rs/zerolog"

	"github.com/a2amesh/a2amesh/internal/version"
)

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
