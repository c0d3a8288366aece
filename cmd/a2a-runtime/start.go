package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapterclient"
	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/ledger"
	"github.com/a2amesh/a2amesh/internal/logging"
	"github.com/a2amesh/a2amesh/internal/profile"
	"github.com/a2amesh/a2amesh/internal/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/toolserver"
	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"
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
			log, err := logging.New(logging.Config{Level: g.logLevel, Component: "runtime"})
			if err != nil {
				return err
			}
			spans, err := tracing.StartProgram(cmd.Context(), "a2a-runtime", log)
			if err != nil {
				return err
			}
			defer spans.ShutdownWithin(5*time.Second, log)
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
			if run.Provider != "" {
				envFile := adapterEnv
				if envFile != "" {
					if _, err := os.Stat(envFile); err != nil {
						return fmt.Errorf("--adapter-env-file: %w", err)
					}
				} else {
					envFile = filepath.Join(filepath.Dir(g.store().Path()), "adapter.env")
				}
				proc, err := startAdapter(ctx, adapter, run, envFile, log)
				if err != nil {
					return err
				}
				// Deferred first, so it runs last: after the running tasks drained.
				defer proc.Stop()
			}
			led, err := ledger.New(ledgerDir(), p.AgentID, p.RuntimeID, ledger.WithSecrets(p.RuntimeToken))
			if err != nil {
				return err
			}
			defer led.Close()

			dial := runtimeengine.DialConfig{Profile: p, Mode: transport, NATSURL: natsURL, API: api, Logger: log}
			tr, hello, err := runtimeengine.Dial(ctx, dial)
			if err != nil {
				return whyRefused(p, reauthHint(err))
			}
			// Where to connect may have changed since pairing (the agent's
			// home region moved): the profile follows.
			tr, hello, fresh := runtimeengine.FollowHome(ctx, dial, tr, hello)
			if fresh != nil {
				p.NATS = *fresh
				if err := g.store().RecordNATS(p.Name(), *fresh); err != nil {
					log.Warn().Err(err).Msg("new NATS addresses not stored in the profile")
				}
			}
			defer tr.Close()
			hctx, hcancel := context.WithTimeout(ctx, 2*time.Second)
			if h, err := adapter.Health(hctx); err != nil {
				log.Warn().Err(err).Str("endpoint", adapter.Endpoint()).Msg("local adapter is not answering yet; no task runs are claimed until it does")
			} else {
				log.Info().Str("provider", h.Provider).Str("endpoint", adapter.Endpoint()).Msg("local adapter healthy")
			}
			hcancel()

			var metrics *runtimeengine.Metrics
			// The status port serves before the engine exists.
			var running atomic.Pointer[runtimeengine.Engine]
			if statusListen != "" {
				reg := prometheus.NewRegistry()
				reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
				metrics = runtimeengine.NewMetrics(reg, led)
				status, err := runtimeengine.ServeStatus(statusListen, reg, func() []byte {
					health, _ := json.Marshal(map[string]any{"ok": true, "agent_id": p.AgentID, "runtime_id": p.RuntimeID,
						"transport": tr.Name(), "adapter_ready": running.Load() == nil || running.Load().AdapterReady()})
					return health
				})
				if err != nil {
					return fmt.Errorf("status port: %w", err)
				}
				defer status.Close()
				log.Info().Str("status", "http://"+status.Addr()).Msg("status port: /metrics and /healthz")
			}
			store := g.store()
			// Where the runtime is connected, and with which settings, goes
			// into the profile for a2a-runtime status: at once, and again at
			// a heartbeat after the connection moved (to another server or
			// region).
			var recorded profile.Connection
			recordConnection := func() {
				c := tr.Connection()
				if c.Transport == recorded.Transport && c.Server == recorded.Server && c.Region == recorded.Region && !recorded.At.IsZero() {
					return
				}
				c.PID, c.APIBase, c.LocalAdapter = os.Getpid(), p.APIBase, local
				if err := store.RecordConnection(p.Name(), c); err != nil {
					log.Debug().Err(err).Msg("connection not recorded in the profile")
					return
				}
				recorded = c
			}
			recordConnection()
			defer func() {
				if err := store.RecordStopped(p.Name(), os.Getpid()); err != nil {
					log.Debug().Err(err).Msg("the stop not recorded in the profile")
				}
			}()
			// Hosts get the delegation tools of their run, over either
			// transport.
			tools, err := toolserver.Start(toolserver.Config{Platform: runtimeengine.Delegation(tr)})
			if err != nil {
				return fmt.Errorf("tool server: %w", err)
			}
			defer func() { _ = tools.Close() }()
			if p.SealingKey == "" {
				log.Warn().Msg("this runtime has no sealing key (it was paired by an older a2a-runtime): tasks with environment variables are refused for its agent until it is paired again")
			}
			c := runtimeengine.NewRuntime(runtimeengine.RuntimeConfig{
				Tools:      tools,
				SealingKey: p.SealingKey,
				AgentID:    p.AgentID, RuntimeID: p.RuntimeID, Transport: tr, Hello: hello, API: api, Adapter: adapter,
				Ledger: led, Platform: p.Platform, Concurrency: concurrency, TaskTimeout: taskTimeout, DrainGrace: drainGrace,
				AdapterWait: adapterWait,
				OnHeartbeat: func(at time.Time) {
					if err := store.RecordHeartbeat(p.Name(), at); err != nil {
						log.Debug().Err(err).Msg("last heartbeat not recorded in the profile")
					}
					recordConnection()
				},
				Metrics: metrics,
				Logger:  log,
			})
			running.Store(c)
			// A second interrupt during the drain stops at once.
			go func() {
				<-ctx.Done()
				again := make(chan os.Signal, 1)
				signal.Notify(again, os.Interrupt)
				<-again
				log.Warn().Msg("second interrupt: stopping now")
				c.StopNow()
			}()
			log.Info().Str("transport", tr.Name()).Int("concurrency", max(concurrency, 1)).Msg("runtime started")
			if err := c.Run(ctx); err != nil {
				return whyRefused(p, err)
			}
			log.Info().Msg("runtime stopped")
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

// startAdapter runs a2a-adapter with provider on the endpoint's port, under
// the runtime's supervision.
func startAdapter(ctx context.Context, client *adapterclient.Client, run profile.SupervisedAdapter, envFile string, log zerolog.Logger) (*runtimeengine.AdapterProcess, error) {
	provider, bin, args := run.Provider, run.Program, run.Args
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
	proc, err := runtimeengine.StartAdapter(ctx, runtimeengine.AdapterProcessConfig{
		Binary: bin, Provider: provider, Listen: u.Host, Args: args, Client: client,
		EnvFile: envFile, Output: os.Stderr, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("--adapter %s: %w", provider, err)
	}
	return proc, nil
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
