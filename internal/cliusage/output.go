package cliusage

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Output formats of the commands that print answers (-o, --output).
const (
	OutputTable = "table" // for people: columns, or one field per line
	OutputJSON  = "json"  // for scripts: one JSON document, indented
	OutputJSONL = "jsonl" // for scripts and streams: one JSON value per line
)

// OutputFlag adds -o/--output to fs, taking one of formats (the empty
// value, when it is def, means the command chooses) and offered to shell
// completion for cmd: a value not among them is a wrong command line.
func OutputFlag(cmd *cobra.Command, fs *pflag.FlagSet, p *string, def, usage string, formats ...string) {
	*p = def
	fs.VarP(&choice{p: p, allowed: formats}, "output", "o", usage)
	CompleteValues(cmd, "output", formats...)
}

// choice is a string flag that takes one of a few values.
type choice struct {
	p       *string
	allowed []string
}

func (c *choice) String() string { return *c.p }
func (c *choice) Type() string   { return "format" }

func (c *choice) Set(s string) error {
	if !slices.Contains(c.allowed, s) {
		return fmt.Errorf("not one of %s", strings.Join(c.allowed, ", "))
	}
	*c.p = s
	return nil
}

// ListingAnnotation marks, in a command's Annotations, a command that
// lists though it is not named list (agents runtimes, webhooks
// deliveries): it takes -o like every list.
const ListingAnnotation = "listing"

// Listing reports whether c lists things: named list or ls, or marked
// with ListingAnnotation. Every such command takes -o table, json, jsonl.
func Listing(c *cobra.Command) bool {
	return c.Name() == "list" || c.Name() == "ls" || c.Annotations[ListingAnnotation] == "true"
}
