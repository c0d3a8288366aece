package main

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/cmd/internal/programcli"
	"github.com/a2amesh/a2amesh/internal/logging"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

func newUp(g *globals) *cobra.Command {
	var cfg platform.Config
	var pprofAddr *string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run the whole platform in one process on an embedded NATS server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			log, stop, err := openPlatformProgram(cmd, g, "platform", "a2a-platform", *pprofAddr)
			if err != nil {
				return err
			}
			defer stop()
			cfg.DataDir, cfg.Logger = g.dataDir, log
			if cfg.DownloadsDir == "" {
				cfg.OwnProgramsDir = ownProgramsDir()
			}
			p, err := platform.Up(cmd.Context(), cfg)
			if err != nil {
				return settingErrors(cmd, &cfg, err)
			}
			log.Info().Str("http", "http://"+p.HTTPAddr()).Str("nats", p.NATSURL()).Str("websocket", p.WebSocketURL()).Str("monitor", p.MonitorURL()).
				Str("data_dir", cfg.DataDir).Dur("startup_ms", time.Since(start)).Msg("platform ready")
			<-cmd.Context().Done()
			log.Info().Msg("shutting down")
			p.Stop()
			log.Info().Msg("stopped")
			return nil
		},
	}
	addPlatformFlags(cmd, &cfg)
	pprofAddr = addProfileFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&cfg.NATSListen, "nats-listen", platform.Defaults().NATSListen, `NATS listen address for runtimes and "serve" processes ("off": in-process only)`)
	f.StringVar(&cfg.NATSWebSocketListen, "nats-ws-listen", "", "NATS over WebSocket listen address (off unless given)")
	f.StringVar(&cfg.NATSMonitorListen, "monitor-listen", "", "serve the embedded NATS server's monitoring (/varz, /jsz, /connz) for the NATS exporters at this address (off unless given; it is not authenticated, so keep it private)")
	return cmd
}

// addPlatformFlags adds the flags `up` and `serve` share.
func addPlatformFlags(cmd *cobra.Command, cfg *platform.Config) {
	f := cmd.Flags()
	d := platform.Defaults()
	f.StringVar(&cfg.HTTPAddr, "http", d.HTTPAddr, "HTTP API listen address")
	f.StringVar(&cfg.PublicURL, "public-url", "", "URL people and runtimes use to reach the HTTP API (default http://<--http>)")
	f.StringVar(&cfg.NATSAdvertise, "nats-advertise", "", "NATS URL told to runtimes at pairing (default: the listen address)")
	f.StringVar(&cfg.NATSWebSocketAdvertise, "nats-ws-advertise", "", "WebSocket URL told to runtimes at pairing")
	f.DurationVar(&cfg.HeartbeatTimeout, "heartbeat-timeout", d.HeartbeatTimeout, "a runtime is offline after this long without a heartbeat")
	f.DurationVar(&cfg.Lease, "lease", d.Lease, "a claimed task run is lost this long after its runtime stops renewing")
	f.DurationVar(&cfg.PairingCodeTTL, "pairing-code-ttl", d.PairingCodeTTL, "how long a pairing code stays valid")
	f.DurationVar(&cfg.EventRetention, "event-retention", d.EventRetention, "how long events are kept")
	f.Int64Var(&cfg.MaxArtifactBytes, "max-artifact-bytes", d.MaxArtifactBytes, "largest artifact accepted")
	f.StringVar(&cfg.DownloadsDir, "downloads-dir", "", "runtime and adapter programs offered at /install.sh, from make dist (default <data-dir>/downloads)")
	f.StringVar(&cfg.PlatformName, "platform-name", d.PlatformName, "platform name passed to adapters")
	f.StringVar(&cfg.Region, "region", "", "region this process serves, the home region of agents created without one: on a NATS cluster its name (which this must match), on a server in no cluster this (default \""+bus.DefaultRegion+"\")")
	f.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", d.ShutdownGrace, "how long a graceful stop may take")
	f.BoolVar(&cfg.AllowPrivateWebhooks, "allow-private-webhooks", false, "let webhook URLs reach loopback, private and link-local addresses (off: such targets are refused)")
	f.IntVar(&cfg.A2ARateLimitPerMinute, "a2a-rate-limit-per-minute", d.A2ARateLimitPerMinute, "A2A requests each caller may make to each agent (and to the partner and envelope routes) per minute, per gateway process")
	f.StringVar(&cfg.A2AJWKSURL, "a2a-jwks-url", "", "JWKS of an identity provider whose bearer tokens A2A callers may use (with --a2a-jwt-issuer and --a2a-jwt-audience)")
	f.StringVar(&cfg.A2AJWTIssuer, "a2a-jwt-issuer", "", "issuer (iss) the identity provider's tokens must carry")
	f.StringVar(&cfg.A2AJWTAudience, "a2a-jwt-audience", "", "audience (aud) the identity provider's tokens must carry")
	f.BoolVar(&cfg.A2ADisablePush, "a2a-disable-push", false, "turn A2A push notifications off (agent cards say so)")
	f.DurationVar(&cfg.A2ABlockingWait, "a2a-blocking-wait", d.A2ABlockingWait, "longest a blocking A2A message/send waits for its task to end before answering it as it is")
	f.IntVar(&cfg.DelegationMaxDepth, "delegation-max-depth", d.DelegationMaxDepth, "longest delegation chain: how many agents may delegate one after another")
	f.StringVar(&cfg.A2ACardID, "a2a-card-id", d.A2ACardID, "agentId of the platform's card at GET /a2a/discovery")
	f.StringVar(&cfg.A2ACardName, "a2a-card-name", d.A2ACardName, "agentName of the platform's card at GET /a2a/discovery")
	f.StringVar(&cfg.A2ABaseURL, "a2a-base-url", "", "base URL the partner routes' card gives (default: --public-url)")
	f.StringVar(&cfg.A2AWebhookURL, "a2a-webhook-url", "", "where partner platforms send callbacks (default <base URL>/a2a/webhook)")
	f.StringVar(&cfg.A2AHealthURL, "a2a-health-url", "", "health check the partner routes' card gives (default <base URL>/healthz)")
}

// openPlatformProgram opens the log and tracing of an `up` or `serve`
// process (programcli.OpenProgram) and serves its runtime profiles at
// pprofAddr when one is given. The caller defers stop.
func openPlatformProgram(cmd *cobra.Command, g *globals, component, serviceName, pprofAddr string) (log zerolog.Logger, stop func(), err error) {
	log, stop, err = programcli.OpenProgram(cmd.Context(), logging.Config{Level: g.logLevel, Component: component}, serviceName)
	if err != nil {
		return log, nil, err
	}
	if err := serveProfiles(pprofAddr, log); err != nil {
		stop()
		return log, nil, err
	}
	return log, stop, nil
}

// readSecretEnv reads a secret from an environment variable, so it never
// appears in a process listing.
func readSecretEnv(name string) string { return strings.TrimSpace(os.Getenv(name)) }

// ownProgramsDir is the folder of this a2a-platform program, where `make
// build` puts a2a-runtime and a2a-adapter too ("" when it cannot be told).
func ownProgramsDir() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return ""
	}
	return filepath.Dir(exe)
}
