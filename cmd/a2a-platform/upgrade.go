package main

import (
	"fmt"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/logging"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/spf13/cobra"
)

// newUpgrade is `a2a-platform upgrade`: it moves a deployment of several
// regions written by an earlier version to the layout this one runs.
func newUpgrade(g *globals) *cobra.Command {
	var cfg platform.UpgradeConfig
	cmd := &cobra.Command{
		Use:   "upgrade",
		Short: "Move a deployment of regions to this version's layout (global records owned per region); safe to run again",
		Long: "Move a deployment of regions written by an earlier version (global records kept in the origin region and mirrored to the others) " +
			"to records owned per region: every region gets a bucket of the records it owns and an aggregate of every region's, and every " +
			"record is copied to its owner (an agent to its home region, any other record to the origin). Run it with every region's " +
			"NATS servers up and the platform's services stopped; it prints each step it takes, and nothing is left to do on a second run. " +
			"The service password is read from A2A_MESH_NATS_PASSWORD.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logging.New(logging.Config{Level: g.logLevel, Component: "upgrade"})
			if err != nil {
				return err
			}
			cfg.Logger = log
			cfg.NATSPassword = readSecretEnv("A2A_MESH_NATS_PASSWORD")
			did, err := platform.Upgrade(cmd.Context(), cfg)
			for _, step := range did {
				fmt.Fprintln(cmd.OutOrStdout(), step)
			}
			if err != nil {
				return settingErrors(cmd, &cfg, err)
			}
			if len(did) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to upgrade: the global records are already owned per region")
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), "upgraded: start the platform's services")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.NATSURL, "nats-url", "", "NATS server URL(s) of any region, comma-separated")
	f.StringVar(&cfg.NATSUser, "nats-user", bus.DefaultServiceUser, "NATS user of platform services (an auth_callout auth_user)")
	f.StringVar(&cfg.NATSNkeySeedFile, "nats-nkey-seed-file", "", "user nkey seed of platform services, for servers that list them by nkey (replaces --nats-user)")
	return cmd
}
