// Package programcli holds what the command lines of the three programs
// (a2a-platform, a2a-runtime, a2a-adapter) share: the root command's
// settings and the --log-level flag.
package programcli

import (
	"strings"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/version"
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
