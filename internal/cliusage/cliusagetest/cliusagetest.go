// Package cliusagetest checks that a program's command tree keeps the
// conventions of package cliusage; the programs' tests call it.
package cliusagetest

import (
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Walk calls fn for root and every command under it.
func Walk(root *cobra.Command, fn func(*cobra.Command)) {
	fn(root)
	for _, c := range root.Commands() {
		Walk(c, fn)
	}
}

// EveryFlagHasItsVariable fails for each flag of each command under root
// (help, version and hidden deprecated ones aside) whose help does not
// name its variable, cliusage.EnvName of its name: the sign that
// cliusage.BindEnv bound it. It returns how many flags it checked.
func EveryFlagHasItsVariable(t testing.TB, root *cobra.Command) int {
	t.Helper()
	n := 0
	Walk(root, func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if f.Name == "help" || f.Name == "version" || f.Deprecated != "" {
				return
			}
			n++
			if tag := "[" + cliusage.EnvName(f.Name) + "]"; !strings.Contains(f.Usage, tag) {
				t.Errorf("%s --%s has no variable: its help does not name %s", c.CommandPath(), f.Name, tag)
			}
		}
		c.Flags().VisitAll(check)
		c.PersistentFlags().VisitAll(check)
	})
	return n
}

// Listings are the commands under root that list things (cliusage.Listing).
func Listings(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	Walk(root, func(c *cobra.Command) {
		if cliusage.Listing(c) {
			out = append(out, c)
		}
	})
	return out
}
