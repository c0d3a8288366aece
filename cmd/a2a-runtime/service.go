package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/a2amesh/a2amesh/internal/serviceunit"
	"github.com/spf13/cobra"
)

func newService(g *globals) *cobra.Command {
	var profileName string
	cmd := &cobra.Command{Use: "service", Short: "Run `a2a-runtime start` as a user service (systemd on Linux, launchd on macOS)"}
	cmd.PersistentFlags().StringVar(&profileName, "profile", "", "profile the service runs (default the active one)")
	build := func() (*serviceunit.Service, error) {
		p, err := g.resolve(profileName)
		if err != nil {
			return nil, err
		}
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
			Spec: serviceunit.Spec{Executable: exe, Profile: p.Name(), ProfileFile: g.store().Path()},
		})
	}
	install := &cobra.Command{
		Use: "install", Short: "Install and start the user service", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := build()
			if err != nil {
				return err
			}
			if err := s.Install(cmd.Context()); err != nil {
				return err
			}
			fmt.Printf("installed %s (%s)\n", s.Name(), s.Path())
			return nil
		},
	}
	uninstall := &cobra.Command{
		Use: "uninstall", Short: "Stop and remove the user service", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := build()
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
			s, err := build()
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
