package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"

	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/runtime/serviceunit"
	"github.com/spf13/cobra"
)

func newService(g *globals) *cobra.Command {
	var profileName string
	cmd := &cobra.Command{Use: "service", Short: "Run `a2a-runtime start` as a user service (systemd on Linux, launchd on macOS)"}
	cmd.PersistentFlags().StringVar(&profileName, "profile", "", "profile the service runs (default the active one)")
	build := func(p profile.Profile, startArgs ...string) (*serviceunit.Service, error) {
		kind, err := serviceunit.KindFor(runtime.GOOS)
		if err != nil {
			return nil, err
		}
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		if exe, err = filepath.EvalSymlinks(exe); err != nil {
			return nil, err
		}
		return serviceunit.New(serviceunit.Config{
			Kind: kind, Home: home(), UID: os.Getuid(), Runner: serviceunit.ExecRunner{},
			Spec: serviceunit.Spec{
				Executable: exe, Profile: p.Name(), ProfileFile: g.store().Path(), StartArgs: startArgs,
				// The service runs in the home folder, and finds the
				// programs the installing shell finds (the agent host's CLI
				// among them): a service manager gives neither.
				WorkingDirectory: home(), Path: serviceunit.ServicePath(os.Getenv("PATH")),
			},
		})
	}
	// profileService is the service of the chosen profile, as installed
	// without start flags: enough to stop, remove or ask about it.
	profileService := func() (*serviceunit.Service, error) {
		p, err := g.resolve(profileName)
		if err != nil {
			return nil, err
		}
		return build(p)
	}
	install := &cobra.Command{
		Use:   "install [start flags] [-- adapter arguments]",
		Short: "Install and start the user service",
		Long: "Install and start the user service, which runs a2a-runtime start with the flags given here\n" +
			"(and, with --adapter, the adapter it supervises, with the arguments after --). On systemd it\n" +
			"also enables lingering, so the service runs after logout and starts at boot.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && (!cmd.Flags().Changed("adapter") || cmd.ArgsLenAtDash() != 0) {
				return errors.New("arguments after -- go to the adapter started with --adapter; install takes no others")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, adapterArgs []string) error {
			p, err := g.resolve(profileName)
			if err != nil {
				return err
			}
			startArgs, err := serviceStartArgs(cmd, p, adapterArgs)
			if err != nil {
				return err
			}
			s, err := build(p, startArgs...)
			if err != nil {
				return err
			}
			if err := s.Install(cmd.Context()); err != nil {
				return err
			}
			fmt.Printf("installed %s (%s)\n", s.Name(), s.Path())
			if u, err := user.Current(); err != nil {
				fmt.Fprintf(os.Stderr, "warning: lingering not enabled (%v): the service stops when you log out\n", err)
			} else if err := s.EnableLinger(cmd.Context(), u.Username); err != nil {
				fmt.Fprintf(os.Stderr, "warning: %v\n", err)
			}
			return nil
		},
	}
	startFlags(install)
	uninstall := &cobra.Command{
		Use: "uninstall", Short: "Stop and remove the user service", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := profileService()
			if err != nil {
				return err
			}
			if err := s.Uninstall(cmd.Context()); err != nil {
				return err
			}
			fmt.Printf("removed %s\n", s.Name())
			return nil
		},
	}
	status := &cobra.Command{
		Use: "status", Short: "Show whether the user service is installed and running", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := profileService()
			if err != nil {
				return err
			}
			st, err := s.Status(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Printf("%s: installed=%v active=%v state=%s\n", s.Name(), st.Installed, st.Active, st.State)
			return nil
		},
	}
	cmd.AddCommand(install, uninstall, status)
	return cmd
}

// serviceStartFlags are the flags of start a service carries.
var serviceStartFlags = []string{"concurrency", "metrics-listen", "transport", "nats-url", "api-base",
	"task-timeout", "shutdown-grace", "adapter-wait", "local-agent-endpoint", "adapter", "adapter-bin", "adapter-token-file"}

// startFlags gives install the flags of start it carries, with start's
// help and defaults.
func startFlags(install *cobra.Command) {
	start := newStart(&globals{})
	install.Flags().SetNormalizeFunc(providerAlias)
	for _, name := range serviceStartFlags {
		install.Flags().AddFlag(start.Flags().Lookup(name))
	}
	startCompletions(install)
	formerStartFlags(install.Flags())
}

// serviceStartArgs is start's command line for the service: the carried
// flags that were given, the adapter program as an absolute path (a service
// manager does not search PATH as a shell does), and the adapter's arguments.
// An adapter chosen at pairing stays in the profile, where start finds it;
// only its program is resolved here when pairing did not name one.
func serviceStartArgs(cmd *cobra.Command, p profile.Profile, adapterArgs []string) ([]string, error) {
	var args []string
	f := cmd.Flags()
	for _, name := range serviceStartFlags {
		fl := f.Lookup(name)
		if !fl.Changed || name == "adapter-bin" {
			continue
		}
		value := fl.Value.String()
		if name == "adapter-token-file" {
			// A service does not start in the folder install ran in.
			abs, err := filepath.Abs(value)
			if err != nil {
				return nil, err
			}
			value = abs
		}
		args = append(args, "--"+name, value)
	}
	runs := f.Changed("adapter") && f.Lookup("adapter").Value.String() != noAdapter
	paired := !f.Changed("adapter") && p.SupervisedAdapter.Provider != ""
	if !runs && !paired {
		return args, nil
	}
	bin := f.Lookup("adapter-bin").Value.String()
	if paired && bin == "" && p.SupervisedAdapter.Program != "" {
		return args, nil
	}
	var err error
	if bin == "" {
		if bin, err = adapterProgram(); err != nil {
			return nil, err
		}
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return nil, err
	}
	args = append(args, "--adapter-bin", bin)
	if len(adapterArgs) > 0 {
		dir, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		args = append(append(args, "--"), absoluteAdapterArgs(dir, adapterArgs)...)
	}
	return args, nil
}
