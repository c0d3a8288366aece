// Package loglevel holds the --log-level flag the three programs
// (a2a-platform, a2a-runtime, a2a-adapter) share.
package loglevel

import (
	"strings"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Default is the log level of a program not told otherwise.
const Default = "info"

// Levels are the values --log-level takes, most verbose first.
var Levels = []string{"trace", "debug", "info", "warn", "error"}

// Flag adds --log-level to fs, bound to p, and completes its values on cmd.
func Flag(cmd *cobra.Command, fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "log-level", Default, "log level: "+strings.Join(Levels, ", "))
	cliusage.CompleteValues(cmd, "log-level", Levels...)
}
