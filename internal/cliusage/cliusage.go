// Package cliusage makes a command tree answer misuse (an unknown
// subcommand, a wrong flag or value, wrong arguments) with an error that
// says what to do next, the help to read, instead of printing help and
// succeeding, and gives every such error the exit code of misuse
// (ExitUsage). The programs' mains apply it to their root command.
package cliusage

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Guard applies every rule of this package to root and the commands under
// it. Call it once the tree is complete.
func Guard(root *cobra.Command) {
	root.SetFlagErrorFunc(flagError)
	argsHints(root)
	commandGroups(root)
}

// argsHints makes a wrong number of arguments, on every command, an error
// that points to the command's help.
func argsHints(c *cobra.Command) {
	for _, sub := range c.Commands() {
		argsHints(sub)
	}
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return Usage(fmt.Errorf("%w\nRun '%s --help' for usage", err, cmd.CommandPath()))
			}
			return nil
		}
	}
}

// commandGroups makes every command that only groups others (agents,
// tasks, ...) refuse an unknown subcommand with an error that names the
// closest ones, instead of printing its help and succeeding; without a
// subcommand it still prints its help.
func commandGroups(c *cobra.Command) {
	for _, sub := range c.Commands() {
		commandGroups(sub)
	}
	if !c.HasSubCommands() || c.Runnable() || !c.HasParent() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2 // cobra sets it on the root only
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return Usage(fmt.Errorf("%s\nRun '%s --help' for its commands", msg, cmd.CommandPath()))
	}
}

// flagError points a wrong flag or value to the command's help.
func flagError(cmd *cobra.Command, err error) error {
	return Usage(fmt.Errorf("%w\nRun '%s --help' for its flags", err, cmd.CommandPath()))
}
