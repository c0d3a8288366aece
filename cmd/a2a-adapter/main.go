// Command a2a-adapter is the local HTTP adapter that a2a-runtime hands task
// runs to (seed 000): it listens on loopback and runs each task on a local
// agent host through a provider.
//
//	a2a-adapter --provider echo
//	a2a-adapter --provider command -- ./my-agent.sh --flag
//	a2a-adapter --provider claude --permission-mode acceptEdits
//	a2a-adapter doctor --provider codex
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/a2amesh/a2amesh/cmd/internal/programcli"
	"github.com/a2amesh/a2amesh/internal/adapter"
	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/keeper"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/cpuprofile"
	"github.com/a2amesh/a2amesh/internal/gomaxprocs"
	"github.com/a2amesh/a2amesh/internal/logging"
	"github.com/a2amesh/a2amesh/internal/version"
)

func main() {
	// Each task's host runs under this program started again as its
	// keeper, which returns here only in the adapter itself.
	keeper.Init()
	gomaxprocs.Default(gomaxprocs.Relay)
	stopProfile, err := cpuprofile.Start(os.Getenv(cpuprofile.EnvVar))
	if err != nil {
		fmt.Fprintln(os.Stderr, "a2a-adapter:", err)
		os.Exit(1)
	}
	err = newRootCommand().Execute()
	stopProfile()
	if err != nil {
		os.Exit(cliusage.ExitCode(err))
	}
}

type options struct {
	provider        string
	listen          string
	instructionFile string
	workdir         string
	queueSize       int
	taskTimeout     time.Duration
	killGrace       time.Duration
	shutdownGrace   time.Duration
	allowRemote     bool
	authTokenFile   string
	logLevel        string
	host            hostOptions
}

func newRootCommand() *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "a2a-adapter --provider " + strings.Join(allProviders, "|") + " [flags] [-- command args...]",
		Short: "Run tasks handed over by a2a-runtime on a local agent host",
		Long: "a2a-adapter serves GET /health and POST /run-task on loopback for a2a-runtime\n" +
			"and runs one task at a time on the chosen provider. With --provider command,\n" +
			"the command after -- runs once per task: task text on stdin, stdout as the answer.\n" +
			"The providers claude, codex, gemini, cursor and hermes run that agent host's CLI\n" +
			"headless in each conversation's own directory; openclaw sends tasks to the local\n" +
			"OpenClaw gateway. Check a host first with: a2a-adapter doctor --provider <name>.",
		SilenceUsage: true,
		Version:      version.Line(),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				if cmd.SuggestionsMinimumDistance <= 0 {
					cmd.SuggestionsMinimumDistance = 2
				}
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					return fmt.Errorf("unknown command %q for %q; did you mean %s?", args[0], cmd.CommandPath(), strings.Join(s, " or "))
				}
				return errors.New("put the command and its arguments after --")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkHostFlags(cmd, o.provider); err != nil {
				return err
			}
			return run(o, args)
		},
	}
	cmd.AddCommand(newDoctorCommand())
	cmd.AddCommand(newApproveHookCommand())
	f := cmd.Flags()
	f.StringVar(&o.provider, "provider", "", "provider that runs tasks: "+strings.Join(allProviders, ", ")+" (required)")
	f.StringVar(&o.listen, "listen", adapter.DefaultListen, "address to listen on; loopback unless --allow-remote")
	f.StringVar(&o.instructionFile, "instruction-file", "", "file whose text is given to every task as instructions")
	f.StringVar(&o.workdir, "workdir", defaultWorkdir(), "root of the per-conversation working directories")
	f.IntVar(&o.queueSize, "queue-size", adapter.DefaultQueueSize, "requests that may wait while a task runs; 0 refuses them")
	f.DurationVar(&o.taskTimeout, "task-timeout", adapter.DefaultTaskTimeout, "time limit of one task run")
	f.DurationVar(&o.killGrace, "kill-grace", provider.DefaultKillGrace, "time between SIGINT and SIGKILL when a task's processes are stopped")
	f.DurationVar(&o.shutdownGrace, "shutdown-grace", 30*time.Second, "time the running task gets to finish on SIGINT/SIGTERM")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "permit a non-loopback --listen address (requires --auth-token-file)")
	f.StringVar(&o.authTokenFile, "auth-token-file", "", "file (only you may read it) holding the bearer token every request but /health must carry; a2a-runtime start --adapter passes one of its own")
	programcli.LogLevelFlag(cmd, f, &o.logLevel)
	o.host.addFlags(f)
	cliusage.CompleteValues(cmd, "provider", allProviders...)
	cliusage.BindEnv(cmd)
	cliusage.Guard(cmd)
	return cmd
}

func defaultWorkdir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".a2a", "adapter", "work")
}

func run(o options, argv []string) error {
	log, stop, err := programcli.OpenProgram(context.Background(), logging.Config{Level: o.logLevel, Component: "a2a-adapter"}, "a2a-adapter")
	if err != nil {
		return err
	}
	defer stop()
	cfg, err := o.serverConfig(argv)
	if err != nil {
		return err
	}
	cfg.Logger = log
	srv, err := adapter.New(cfg)
	if err != nil {
		return err
	}
	ln, err := srv.Listen(o.listen)
	if errors.Is(err, adapter.ErrRemoteListen) {
		return fmt.Errorf("%w (pass --allow-remote with --auth-token-file to permit it)", err)
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Workdir, 0o700); err != nil {
		ln.Close()
		return fmt.Errorf("create work directory: %w", err)
	}
	// Where it listens is a log line like the rest, so a collector reading
	// the output gets JSON only; its message says it in words as well, for
	// whoever watches the output for it.
	url := "http://" + ln.Addr().String()
	log.Info().Str("addr", ln.Addr().String()).Str("url", url).Str("provider", cfg.Provider.Name()).
		Msg("a2a-adapter listening on " + url + " (provider " + cfg.Provider.Name() + ")")
	if cfg.AuthToken == "" {
		log.Warn().Msg("started without --auth-token-file: anyone on this machine (any program of any user) can post tasks to this adapter; " +
			"give it a token file only you may read, and the runtime the same file with a2a-runtime start --adapter-token-file")
	}
	return serveUntilSignal(srv, ln, o.shutdownGrace, log)
}

// serverConfig turns flags into the adapter's configuration.
func (o options) serverConfig(argv []string) (adapter.Config, error) {
	var cfg adapter.Config
	switch {
	case o.queueSize < 0:
		return cfg, fmt.Errorf("--queue-size must not be negative")
	case o.allowRemote && o.authTokenFile == "":
		return cfg, errors.New("--allow-remote requires --auth-token-file")
	case o.workdir == "":
		return cfg, errors.New("--workdir is required (no home directory to default to)")
	}
	p, err := newProvider(o, argv)
	if err != nil {
		return cfg, err
	}
	workdir, err := filepath.Abs(o.workdir)
	if err != nil {
		return cfg, fmt.Errorf("--workdir: %w", err)
	}
	cfg = adapter.Config{
		Provider:    p,
		Workdir:     workdir,
		QueueSize:   o.queueSize,
		TaskTimeout: o.taskTimeout,
		AllowRemote: o.allowRemote,
	}
	if o.queueSize == 0 {
		cfg.QueueSize = -1
	}
	if cfg.Instructions, err = readTextFile(o.instructionFile, "--instruction-file"); err != nil {
		return cfg, err
	}
	if cfg.AuthToken, err = readTokenFile(o.authTokenFile); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// readTokenFile returns the token of --auth-token-file, or "" when none is
// given.
func readTokenFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	token, err := adapterapi.ReadTokenFile(path)
	if err != nil {
		return "", fmt.Errorf("--auth-token-file: %w", err)
	}
	return token, nil
}

// readTextFile returns the trimmed text of path, or "" when path is empty.
func readTextFile(path, flag string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// serveUntilSignal serves until SIGINT or SIGTERM, then shuts down within
// grace. A second signal stops the running task at once; the adapter still
// waits for its processes to be gone before exiting.
func serveUntilSignal(srv *adapter.Server, ln net.Listener, grace time.Duration, log zerolog.Logger) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case sig := <-sigs:
		log.Info().Str("signal", sig.String()).Dur("grace_ms", grace).Msg("shutting down")
	}

	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			log.Warn().Msg("second signal: stopping the running task now")
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn().Err(err).Msg("shutdown")
	}
	if err := <-served; err != nil {
		return err
	}
	log.Info().Msg("stopped")
	return nil
}
