package main

import (
	"strings"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/spf13/cobra"
)

func newServe(g *globals) *cobra.Command {
	var cfg platform.ServeConfig
	var pprofAddr *string
	cmd := &cobra.Command{
		Use:       "serve <" + strings.Join(platform.Services, "|") + ">",
		Short:     "Run one service against an external NATS server",
		Long:      "Run one service against an external NATS server. The service password is read from A2A_MESH_NATS_PASSWORD, and the gateway's owner credential from --owner-token-file or A2A_MESH_OWNER_TOKEN, so they never show in a process listing.",
		Args:      cobra.ExactArgs(1),
		ValidArgs: platform.Services,
		RunE: func(cmd *cobra.Command, args []string) error {
			log, stop, err := openPlatformProgram(cmd, g, args[0], "a2a-platform-"+args[0], *pprofAddr)
			if err != nil {
				return err
			}
			defer stop()
			cfg.Service, cfg.Logger, cfg.DataDir = args[0], log, g.dataDir
			cfg.NATSPassword = readSecretEnv("A2A_MESH_NATS_PASSWORD")
			cfg.OwnerToken = readSecretEnv("A2A_MESH_OWNER_TOKEN")
			r, err := platform.Serve(cmd.Context(), cfg)
			if err != nil {
				return settingErrors(cmd, &cfg, err)
			}
			ev := log.Info().Str("nats", cfg.NATSURL)
			if addr := r.HTTPAddr(); addr != "" {
				ev = ev.Str("http", "http://"+addr)
			}
			ev.Msg("service ready")
			<-cmd.Context().Done()
			r.Stop()
			return nil
		},
	}
	addPlatformFlags(cmd, &cfg.Config)
	pprofAddr = addProfileFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&cfg.NATSURL, "nats-url", "", "NATS server URL(s), comma-separated")
	f.IntVar(&cfg.Replicas, "replicas", 1, "replicas of every stream and bucket (3 on a NATS cluster)")
	f.StringVar(&cfg.NATSUser, "nats-user", bus.DefaultServiceUser, "NATS user of platform services (an auth_callout auth_user)")
	f.StringVar(&cfg.NATSNkeySeedFile, "nats-nkey-seed-file", "", "user nkey seed of platform services, for servers that list them by nkey (replaces --nats-user)")
	f.StringVar(&cfg.AuthIssuerSeedFile, "auth-issuer-seed-file", "", "credentials: account nkey seed of the server's auth_callout issuer")
	f.StringVar(&cfg.OwnerTokenFile, "owner-token-file", "", "gateway: owner credential file whose hash the API accepts (or the credential itself in A2A_MESH_OWNER_TOKEN)")
	f.StringVar(&cfg.GatewayURL, "gateway-url", "", "delegation: where the gateway's A2A endpoints are reached (default: --public-url)")
	f.StringVar(&cfg.OriginRegion, "origin-region", "", "the region that holds the records every region reads: other regions wait for it rather than become it (default: the first region to start)")
	f.StringVar(&cfg.MetricsListen, "metrics-listen", "", "serve this process's Prometheus metrics at http://<address>/metrics (off unless given)")
	return cmd
}
