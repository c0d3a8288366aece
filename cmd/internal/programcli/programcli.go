// Package programcli holds what the command lines of the three programs
// (a2a-platform, a2a-runtime, a2a-adapter) share: the root command's
// settings, the --log-level flag, and opening the log and tracing.
package programcli

import (
	"context"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/logging"
	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/internal/version"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// DefaultLogLevel is the log level of a program not told otherwise.
const DefaultLogLevel = "info"

// LogLevels are the values --log-level takes, most verbose first.
var LogLevels = []string{"trace", "debug", "info", "warn", "error"}

// Root returns the root command of a program with subcommands: --version
// prints the build, errors and usage are left to the program's main, and
// --log-level, bound to logLevel, is taken by every subcommand.
func Root(use, short string, logLevel *string) *cobra.Command {
	root := &cobra.Command{
		Use:           use,
		Short:         short,
		Version:       version.Line(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	LogLevelFlag(root, root.PersistentFlags(), logLevel)
	return root
}

// LogLevelFlag adds --log-level to fs, bound to p, and completes its values
// on cmd.
func LogLevelFlag(cmd *cobra.Command, fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "log-level", DefaultLogLevel, "log level: "+strings.Join(LogLevels, ", "))
	cliusage.CompleteValues(cmd, "log-level", LogLevels...)
}

// programShutdown is how long a program's deferred stop waits for its
// spans to be flushed.
const programShutdown = 5 * time.Second

// OpenProgram opens the log of one of the programs as logCfg says and
// starts its tracing as serviceName (see tracing.StartProgram). The caller defers
// stop, which flushes spans within five seconds, logging to the log
// returned here.
func OpenProgram(ctx context.Context, logCfg logging.Config, serviceName string) (log zerolog.Logger, stop func(), err error) {
	log, err = logging.New(logCfg)
	if err != nil {
		return log, nil, err
	}
	spans, err := tracing.StartProgram(ctx, serviceName, log)
	if err != nil {
		return log, nil, err
	}
	return log, func() { spans.ShutdownWithin(programShutdown, log) }, nil
}
