package cliusage

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// EnvPrefix starts the name of every environment variable the programs
// read: one per flag (EnvName), and the secrets no flag carries
// (A2A_MESH_OWNER_TOKEN, A2A_MESH_NATS_PASSWORD).
const EnvPrefix = "A2A_MESH_"

// envAnnotation marks a flag whose value came from its environment
// variable; its value is the variable's name.
const envAnnotation = "a2amesh_env"

// EnvName is the environment variable of a flag, derived from its name
// alone: EnvPrefix and the name in capitals, dashes as underscores
// (--nats-url: A2A_MESH_NATS_URL).
func EnvName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// FromEnv reports whether the flag's value came from an environment
// variable rather than the command line, and which.
func FromEnv(f *pflag.Flag) (variable string, ok bool) {
	if v := f.Annotations[envAnnotation]; len(v) == 1 {
		return v[0], true
	}
	return "", false
}

// EnvOption changes how BindEnv binds.
type EnvOption func(*envConfig)

type envConfig struct {
	// renamed maps a variable's former name to its flag.
	renamed map[string]string
}

// Renamed keeps a variable's former name working for the flag, with a
// notice on standard error that names the variable to use instead. It is
// for one release: then the former name goes.
func Renamed(former, flag string) EnvOption {
	return func(c *envConfig) { c.renamed[former] = flag }
}

// BindEnv gives every flag of every command under root its environment
// variable (EnvName): the flag's help names it, and when the command runs,
// a flag not given on the command line takes the variable's value. A
// value the flag cannot take is a wrong command line naming the variable.
// Hidden deprecated flags have none (the flag they stand for has). Call it
// once the tree is complete, before Guard, which points the errors to the
// command's help.
func BindEnv(root *cobra.Command, opts ...EnvOption) {
	cfg := &envConfig{renamed: map[string]string{}}
	for _, o := range opts {
		o(cfg)
	}
	root.InitDefaultCompletionCmd()
	walk(root, func(c *cobra.Command) {
		name := func(f *pflag.Flag) {
			if bound(f) && !strings.HasSuffix(f.Usage, envTag(f.Name)) {
				f.Usage += " " + envTag(f.Name)
			}
		}
		c.Flags().VisitAll(name)
		c.PersistentFlags().VisitAll(name)
		applyBeforeRun(c, cfg)
	})
}

// envTag is how a flag's help names its variable.
func envTag(flag string) string { return "[" + EnvName(flag) + "]" }

// bound reports whether a flag has a variable: every flag but help,
// version and hidden deprecated aliases.
func bound(f *pflag.Flag) bool {
	return f.Name != "help" && f.Name != "version" && f.Deprecated == ""
}

func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// applyBeforeRun reads the variables once the command line is parsed and
// before anything checks it: the argument check (some read flags), the
// hooks, the required flags. Commands that check no arguments get the
// check that takes any, which is what cobra does for them.
func applyBeforeRun(c *cobra.Command, cfg *envConfig) {
	if !c.Runnable() && c.Args == nil {
		return
	}
	check := c.Args
	if check == nil {
		if !c.HasParent() {
			return // a root without an argument check is one that groups others
		}
		check = cobra.ArbitraryArgs
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if err := applyEnv(cmd, cfg); err != nil {
			return err
		}
		return check(cmd, args)
	}
}

// applyEnv sets each flag of cmd not given on the command line from its
// variable, or from the former name of the variable, with a notice.
func applyEnv(cmd *cobra.Command, cfg *envConfig) error {
	formers := map[string]string{}
	for former, flag := range cfg.renamed {
		formers[flag] = former
	}
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || !bound(f) {
			return
		}
		variable := EnvName(f.Name)
		v, ok := os.LookupEnv(variable)
		if former := formers[f.Name]; (!ok || v == "") && former != "" {
			if v, ok = os.LookupEnv(former); ok && v != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s is deprecated and will stop working in the next release: set %s instead\n", cmd.Root().Name(), former, variable)
				variable = former
			}
		}
		if !ok || v == "" {
			return
		}
		if e := cmd.Flags().Set(f.Name, v); e != nil {
			err = Usage(fmt.Errorf("%s=%q is not a value --%s takes: %v", variable, v, f.Name, e))
			return
		}
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[envAnnotation] = []string{variable}
	})
	return err
}
