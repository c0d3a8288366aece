package cliusage

import (
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Deprecated adds to fs the former name of the flag current: hidden from
// help, it still works, sets current (which then counts as given) and
// warns on standard error. fs must already hold current.
func Deprecated(fs *pflag.FlagSet, former, current string) {
	f := fs.Lookup(current)
	fs.AddFlag(&pflag.Flag{
		Name:        former,
		Usage:       f.Usage,
		Value:       &forward{fs: fs, target: current, Value: f.Value},
		DefValue:    f.DefValue,
		NoOptDefVal: f.NoOptDefVal,
	})
	_ = fs.MarkDeprecated(former, "use --"+current)
}

// DeprecatedSwitch adds to fs a former switch (--json) that stands for a
// value of another flag (-o json): hidden, it still works, with a warning.
// The target flag is looked up when the switch is given, so it may be a
// persistent flag of a parent command.
func DeprecatedSwitch(fs *pflag.FlagSet, former, target, value string) {
	fs.AddFlag(&pflag.Flag{
		Name:        former,
		Usage:       "same as --" + target + " " + value,
		Value:       &switchValue{fs: fs, target: target, value: value},
		DefValue:    "false",
		NoOptDefVal: "true",
	})
	_ = fs.MarkDeprecated(former, "use --"+target+" "+value)
}

// forward is a former flag's value: setting it sets the current flag.
type forward struct {
	fs     *pflag.FlagSet
	target string
	pflag.Value
}

func (v *forward) Set(s string) error { return v.fs.Set(v.target, s) }

// switchValue is a former switch's value.
type switchValue struct {
	fs            *pflag.FlagSet
	target, value string
	on            bool
}

func (v *switchValue) String() string   { return strconv.FormatBool(v.on) }
func (v *switchValue) Type() string     { return "bool" }
func (v *switchValue) IsBoolFlag() bool { return true }

func (v *switchValue) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil || !on {
		v.on = false
		return err
	}
	v.on = true
	return v.fs.Set(v.target, v.value)
}

// CompleteValues makes shell completion offer values for cmd's flag
// (a persistent one serves every command under cmd).
func CompleteValues(cmd *cobra.Command, flag string, values ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}
