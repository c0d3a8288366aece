package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// settingErrors turns the settings the platform refused (err, from
// platform.Up or Serve configured by cmd's flags into cfg) into a wrong
// command line naming each flag, or its environment variable when that
// gave the value. Other errors are returned as they are.
func settingErrors(cmd *cobra.Command, cfg any, err error) error {
	var refused []*platform.SettingError
	collectSettings(err, &refused)
	if len(refused) == 0 {
		return err
	}
	lines := make([]string, 0, len(refused)+1)
	for _, s := range refused {
		lines = append(lines, describeSetting(cmd, cfg, s))
	}
	lines = append(lines, fmt.Sprintf("Run '%s --help' for its flags", cmd.CommandPath()))
	return cliusage.Usage(errors.New(strings.Join(lines, "\n")))
}

// collectSettings finds every SettingError in err's tree (errors.Join
// gives several).
func collectSettings(err error, out *[]*platform.SettingError) {
	if s, ok := err.(*platform.SettingError); ok {
		*out = append(*out, s)
		return
	}
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			collectSettings(inner, out)
		}
	case interface{ Unwrap() error }:
		collectSettings(e.Unwrap(), out)
	}
}

// describeSetting names the flag bound to the refused field, as the user
// gave it.
func describeSetting(cmd *cobra.Command, cfg any, s *platform.SettingError) string {
	f := boundFlag(cmd, cfg, s.Field)
	if f == nil {
		return s.Error()
	}
	if variable, ok := cliusage.FromEnv(f); ok {
		return fmt.Sprintf("invalid %s=%q (--%s): %s", variable, os.Getenv(variable), f.Name, s.Reason)
	}
	if f.Value.String() == "" {
		return fmt.Sprintf("--%s %s", f.Name, s.Reason)
	}
	return fmt.Sprintf("invalid --%s %s: %s", f.Name, f.Value.String(), s.Reason)
}

// boundFlag is the flag of cmd whose value is the field of cfg (a pointer
// to a config struct): the flag definitions are the one place that binds a
// flag to a setting, so this asks them rather than keeping a second table.
func boundFlag(cmd *cobra.Command, cfg any, field string) *pflag.Flag {
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	fv := v.Elem().FieldByName(field)
	if !fv.IsValid() || !fv.CanAddr() {
		return nil
	}
	addr := fv.Addr().Pointer()
	var found *pflag.Flag
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if pv := reflect.ValueOf(f.Value); found == nil && pv.Kind() == reflect.Pointer && pv.Pointer() == addr {
			found = f
		}
	})
	return found
}
