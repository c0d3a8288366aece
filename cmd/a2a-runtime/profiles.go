package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

func newProfiles(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "profiles", Short: "List local profiles or choose the active one"}
	list := &cobra.Command{
		Use: "list", Short: "List local profiles (the active one is marked *)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := g.store().Load()
			if err != nil {
				return err
			}
			for _, name := range f.Names() {
				mark := " "
				if name == f.ActiveProfile {
					mark = "*"
				}
				p := f.Profiles[name]
				fmt.Printf("%s %s  %s  %s\n", mark, name, p.APIBase, p.LocalExecutor.Type)
			}
			return nil
		},
	}
	use := &cobra.Command{
		Use: "use <agent_id/runtime_id>", Short: "Make a profile the active one", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.store().Use(args[0]); err != nil {
				return err
			}
			fmt.Printf("active profile: %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(list, use)
	return cmd
}

func newUnpair(g *globals) *cobra.Command {
	var profileName string
	cmd := &cobra.Command{
		Use:   "unpair",
		Short: "Revoke this runtime on the platform (when reachable) and remove its local profile",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.resolve(profileName)
			if err != nil {
				return err
			}
			api, err := platformAPI(p)
			if err == nil {
				ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
				_, err = api.Do(ctx, http.MethodPost, "/agent-runtimes/runtime/revoke", nil, map[string]any{}, nil)
				cancel()
			}
			if err != nil {
				fmt.Printf("could not revoke on the platform (%v); removing the local profile anyway\n", err)
			} else {
				fmt.Println("revoked on the platform")
			}
			if err := g.store().Remove(p.Name()); err != nil {
				return err
			}
			fmt.Printf("removed profile %s\n", p.Name())
			return nil
		},
	}
	cmd.Flags().StringVar(&profileName, "profile", "", "profile to unpair (default the active one)")
	return cmd
}
