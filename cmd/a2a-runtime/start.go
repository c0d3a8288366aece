package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/a2amesh/a2amesh/cmd/internal/programcli"
	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/logging"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newStart(g *globals) *cobra.Command {
	var (
		profileName, apiBase, transport, natsURL string
		statusListen, endpoint                   string
		adapterProvider, adapterBin, adapterEnv  string
		adapterTokenFile                         string
		concurrency                              int
		taskTimeout, drainGrace, adapterWait     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "start [-- adapter arguments]",
		Short: "Connect to the platform and work on this agent's task runs until stopped",
		Long: "Connect outbound to the platform and work on this agent's task runs until stopped.\n" +
			"SIGTERM or Ctrl-C stops claiming and lets running tasks finish (up to --shutdown-grace); a second Ctrl-C stops at once.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && (adapterProvider == "" || cmd.ArgsLenAtDash() != 0) {
				return errors.New("arguments after -- go to the adapter started with --adapter; start takes no others (see a2a-runtime start --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, adapterArgs []string) error {
			log, stop, err := programcli.OpenProgram(cmd.Context(), logging.Config{Level: g.logLevel, Component: "runtime"}, "a2a-runtime")
			if err != nil {
				return err
			}
			defer stop()
			p, err := g.resolve(profileName)
			if err != nil {
				return err
			}
			if apiBase != "" {
				p.APIBase = apiBase
			}
			log = log.With().Str("agent_id", p.AgentID).Str("runtime_id", p.RuntimeID).Logger()
			api, err := platformAPI(p)
			if err != nil {
				return err
			}
			local, err := startAdapterSettings(cmd, p, endpoint, adapterProvider, adapterBin, adapterArgs)
			if err != nil {
				return err
			}
			adapter, err := adapterclient.New(local.Endpoint)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			run := local.Supervised
			if err := useAdapterToken(adapter, adapterTokenFile, run); err != nil {
				return err
			}
			var supervise *runtimeengine.AdapterProcessConfig
			if run.Provider != "" {
				envFile := adapterEnv
				if envFile != "" {
					if _, err := os.Stat(envFile); err != nil {
						return fmt.Errorf("--adapter-env-file: %w", err)
					}
				} else {
					envFile = filepath.Join(filepath.Dir(g.store().Path()), "adapter.env")
				}
				if supervise, err = adapterSettings(adapter, run, envFile); err != nil {
					return err
				}
			}
			store := g.store()
			rt, err := runtimeengine.Start(ctx, runtimeengine.Options{
				Profile: p, Mode: transport, NATSURL: natsURL, API: api, Adapter: adapter, Supervise: supervise,
				LedgerDir: ledgerDir(), StatusListen: statusListen,
				Concurrency: concurrency, TaskTimeout: taskTimeout, DrainGrace: drainGrace, AdapterWait: adapterWait,
				NATSMoved: func(fresh profile.NATS) {
					if err := store.RecordNATS(p.Name(), fresh); err != nil {
						log.Warn().Err(err).Msg("new NATS addresses not stored in the profile")
					}
				},
				// Where the runtime is connected, and with which settings,
				// goes into the profile for a2a-runtime status.
				RecordConnection: func(c profile.Connection) error {
					c.PID, c.APIBase, c.LocalAdapter = os.Getpid(), p.APIBase, local
					if err := store.RecordConnection(p.Name(), c); err != nil {
						log.Debug().Err(err).Msg("connection not recorded in the profile")
						return err
					}
					return nil
				},
				OnHeartbeat: func(at time.Time) {
					if err := store.RecordHeartbeat(p.Name(), at); err != nil {
						log.Debug().Err(err).Msg("last heartbeat not recorded in the profile")
					}
				},
				Stopped: func() {
					if err := store.RecordStopped(p.Name(), os.Getpid()); err != nil {
						log.Debug().Err(err).Msg("the stop not recorded in the profile")
					}
				},
				Logger: log,
			})
			if dialErr := (*runtimeengine.DialError)(nil); errors.As(err, &dialErr) {
				return whyRefused(p, reauthHint(dialErr.Err))
			}
			if refused := startFlagErrors(err); refused != nil {
				return refused
			}
			if err != nil {
				return err
			}
			defer rt.Close()
			// A second interrupt during the drain stops at once.
			go func() {
				<-ctx.Done()
				again := make(chan os.Signal, 1)
				signal.Notify(again, os.Interrupt)
				<-again
				log.Warn().Msg("second interrupt: stopping now")
				rt.StopNow()
			}()
			if err := rt.Run(ctx); err != nil {
				return whyRefused(p, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.SetNormalizeFunc(providerAlias)
	f.StringVar(&profileName, "profile", "", "profile to use (agent_id/runtime_id); default the active one")
	f.StringVar(&apiBase, "api-base", "", "override the platform API base stored in the profile")
	f.StringVar(&transport, "transport", runtimeengine.ModeAuto, "auto (NATS as advertised, HTTP when it is unreachable), nats or http")
	f.StringVar(&natsURL, "nats-url", "", "override the NATS URL advertised at pairing (nats:// or ws://)")
	f.IntVar(&concurrency, "concurrency", runtimeengine.DefaultConcurrency, "task runs worked on at once")
	f.DurationVar(&taskTimeout, "task-timeout", runtimeengine.DefaultTaskTimeout, "longest one adapter call may take")
	f.DurationVar(&drainGrace, "shutdown-grace", runtimeengine.DefaultDrainGrace, "on stop, how long running tasks may finish")
	f.DurationVar(&adapterWait, "adapter-wait", runtimeengine.DefaultAdapterWait, "while the local adapter does not answer, how long to claim nothing and wait for it (-1s: for ever); after that, task runs it cannot take fail with ADAPTER_UNREACHABLE")
	f.StringVar(&endpoint, "local-agent-endpoint", "", "the local adapter's run-task URL for this start (default: the one given at pairing), e.g. http://127.0.0.1:8787/run-task")
	f.StringVar(&adapterProvider, "adapter", "", "start a2a-adapter with this provider (claude, codex, gemini, cursor, hermes, openclaw, command; also --provider) on the endpoint's port, restart it when it exits and stop it on stop; arguments after -- are passed to it. Default: the one chosen at pairing; none runs no adapter. Without either, run the adapter yourself")
	f.StringVar(&adapterEnv, "adapter-env-file", "", "KEY=VALUE lines added to the environment of the adapter start runs, e.g. OPENCLAW_GATEWAY_TOKEN=… (a service does not get your shell's environment); read at each start of the adapter, refused unless only you may read it (default: adapter.env next to the profile file, if it exists)")
	f.StringVar(&adapterTokenFile, "adapter-token-file", "", "for an adapter you run yourself: the file (only you may read it) holding the token it requires, the one given to a2a-adapter --auth-token-file; sent with every request to it. The adapter --adapter runs gets a new token of its own at each start")
	f.StringVar(&adapterBin, "adapter-bin", "", "the a2a-adapter program for --adapter (default: the one next to a2a-runtime, else a2a-adapter on PATH)")
	f.StringVar(&statusListen, "metrics-listen", "", "serve /metrics and /healthz on this local address, e.g. 127.0.0.1:9464 (off unless given: the runtime opens no port by default)")
	startCompletions(cmd)
	formerStartFlags(f)
	return cmd
}

// startOptionFlags names the flag of start that fills each field of the
// runtime's options.
var startOptionFlags = map[string]string{
	"Mode": "--transport", "Concurrency": "--concurrency", "TaskTimeout": "--task-timeout",
	"DrainGrace": "--shutdown-grace", "AdapterWait": "--adapter-wait", "NATSURL": "--nats-url",
	"StatusListen": "--metrics-listen",
}

// startFlagErrors is a wrong command line naming start's flags, when the
// runtime's options refused only fields that flags fill; nil otherwise.
func startFlagErrors(err error) error {
	refused := runtimeengine.OptionErrors(err)
	if len(refused) == 0 {
		return nil
	}
	errs := make([]error, 0, len(refused))
	for _, e := range refused {
		flag, ok := startOptionFlags[e.Field]
		if !ok {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s %s", flag, e.Problem))
	}
	return cliusage.Usage(fmt.Errorf("%w (see a2a-runtime start --help)", errors.Join(errs...)))
}

// startCompletions offers the values of start's flags that have few.
func startCompletions(cmd *cobra.Command) {
	cliusage.CompleteValues(cmd, "adapter", append(providerNames(), noAdapter)...)
	cliusage.CompleteValues(cmd, "transport", runtimeengine.ModeAuto, runtimeengine.ModeNATS, runtimeengine.ModeHTTP)
}

// formerStartFlags keeps start's flags' former names working, hidden and
// with a warning: each concept has one name in the three programs.
func formerStartFlags(f *pflag.FlagSet) {
	cliusage.Deprecated(f, "status-listen", "metrics-listen")
	cliusage.Deprecated(f, "drain-grace", "shutdown-grace")
}

// reauthHint turns a refused credential into plain instructions (seed 001 §4.7).
func reauthHint(err error) error {
	if runtimeengine.IsAuthError(err) {
		return fmt.Errorf("%w (%v); generate a new pairing code for this same agent on the platform and run a2a-runtime pair again: do not create a new agent", runtimeengine.ErrReauth, err)
	}
	return err
}

// startAdapterSettings is the local adapter start works with: the one
// stored in the profile, changed by start's flags (the endpoint; the
// adapter given to start, with its own arguments, else the one chosen at
// pairing; --adapter-bin naming its program; none for --adapter none).
// The running start records it, and status reports it.
func startAdapterSettings(cmd *cobra.Command, p profile.Profile, endpoint, provider, bin string, args []string) (profile.LocalAdapter, error) {
	dir, err := os.Getwd()
	if err != nil {
		return profile.LocalAdapter{}, err
	}
	o := profile.AdapterOverrides{Endpoint: endpoint, Program: absoluteIn(dir, bin)}
	if cmd.Flags().Changed("adapter") {
		run := profile.SupervisedAdapter{Provider: provider, Args: absoluteAdapterArgs(dir, args)}
		if provider == noAdapter {
			run = profile.SupervisedAdapter{}
		}
		o.Supervised = &run
	}
	return p.EffectiveAdapter(o), nil
}

// useAdapterToken makes the client send the token of --adapter-token-file,
// which is for an adapter the user runs: the one start runs gets its own.
func useAdapterToken(client *adapterclient.Client, path string, run profile.SupervisedAdapter) error {
	switch {
	case path == "":
		return nil
	case run.Provider != "":
		return fmt.Errorf("--adapter-token-file is for an adapter you run yourself; the adapter start runs (%s) gets a new token of its own at each start", run.Provider)
	}
	token, err := adapterapi.ReadTokenFile(path)
	if err != nil {
		return fmt.Errorf("--adapter-token-file: %w", err)
	}
	client.SetAuthToken(token)
	return nil
}

// adapterSettings are how start runs a2a-adapter with the provider on
// the endpoint's port, under the runtime's supervision.
func adapterSettings(client *adapterclient.Client, run profile.SupervisedAdapter, envFile string) (*runtimeengine.AdapterProcessConfig, error) {
	bin := run.Program
	u, err := url.Parse(client.Endpoint())
	if err != nil || u.Port() == "" {
		return nil, fmt.Errorf("--adapter needs a local agent endpoint with a port, like http://127.0.0.1:8787/run-task (got %s)", client.Endpoint())
	}
	if bin == "" {
		bin, err = adapterProgram()
		if err != nil {
			return nil, err
		}
	}
	return &runtimeengine.AdapterProcessConfig{
		Binary: bin, Provider: run.Provider, Listen: u.Host, Args: run.Args, EnvFile: envFile, Output: os.Stderr,
	}, nil
}

// adapterProgram finds a2a-adapter next to this program, else on PATH.
func adapterProgram() (string, error) {
	if self, err := os.Executable(); err == nil {
		next := filepath.Join(filepath.Dir(self), "a2a-adapter")
		if _, err := os.Stat(next); err == nil {
			return next, nil
		}
	}
	bin, err := exec.LookPath("a2a-adapter")
	if err != nil {
		return "", errors.New("a2a-adapter is neither next to a2a-runtime nor on PATH: install it, or name it with --adapter-bin")
	}
	return bin, nil
}
