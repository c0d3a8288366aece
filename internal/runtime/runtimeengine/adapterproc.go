package runtimeengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/rs/zerolog"
)

// AdapterProcessConfig describes an adapter the runtime runs itself
// (a2a-runtime start --adapter), so a laptop has one thing to keep alive.
type AdapterProcessConfig struct {
	// Binary is the a2a-adapter program.
	Binary string
	// Provider is its --provider.
	Provider string
	// Listen is its --listen address (the host:port of the endpoint).
	Listen string
	// Args are passed to it after its own flags, as they are (more flags,
	// and for the command provider "--" and the command).
	Args []string
	// EnvFile names an adapter environment file (see ReadAdapterEnvFile)
	// whose variables are added to the adapter's environment at each start.
	EnvFile string
	// Client checks its GET /health. StartAdapter sets its token to the one
	// of the adapter it starts (see adaptertoken.go).
	Client *adapterclient.Client
	// Output receives its standard output and error. Nil discards them.
	Output io.Writer
	// StopGrace is how long it may finish a running task when stopped
	// (SIGTERM, then SIGKILL). Default 30s.
	StopGrace time.Duration
	Logger    zerolog.Logger
}

// ErrAdapterPortBusy is returned by StartAdapter when something else holds
// the adapter's port.
var ErrAdapterPortBusy = errors.New("the local adapter's port is in use")

// Restart pacing of a supervised adapter that keeps exiting.
const (
	adapterRestartMin = 500 * time.Millisecond
	adapterRestartMax = 30 * time.Second
	// adapterStable: an adapter that ran this long has its restart delay reset.
	adapterStable = time.Minute
	// adapterStartWait bounds the wait for a started adapter's /health.
	adapterStartWait = 20 * time.Second
)

// AdapterProcess is a running supervised adapter.
type AdapterProcess struct {
	cfg    AdapterProcessConfig
	log    zerolog.Logger
	tokens *adapterTokens
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartAdapter starts the adapter, waits until it answers GET /health, and
// keeps it running (restarting it when it exits) until Stop. A port that
// something else holds is an error wrapping ErrAdapterPortBusy.
func StartAdapter(ctx context.Context, cfg AdapterProcessConfig) (*AdapterProcess, error) {
	if cfg.StopGrace == 0 {
		cfg.StopGrace = 30 * time.Second
	}
	if cfg.Output == nil {
		cfg.Output = io.Discard
	}
	if err := checkAdapterArgs(cfg.Args); err != nil {
		return nil, err
	}
	if err := portFree(ctx, cfg); err != nil {
		return nil, err
	}
	tokens, err := newAdapterTokens()
	if err != nil {
		return nil, err
	}
	a := &AdapterProcess{cfg: cfg, log: cfg.Logger, tokens: tokens, done: make(chan struct{})}
	exited, err := a.spawn()
	if err != nil {
		tokens.removeAll()
		return nil, err
	}
	if err := a.waitHealthy(ctx, exited); err != nil {
		a.kill()
		<-exited
		tokens.removeAll()
		return nil, err
	}
	a.log.Info().Str("provider", cfg.Provider).Str("listen", cfg.Listen).Msg("local adapter started")
	// Once ctx ends (the runtime is stopping) an adapter that exits is not
	// started again: a service manager stopping the runtime stops it too.
	sctx, cancel := context.WithCancel(ctx)
	a.cancel = cancel
	go a.supervise(sctx, exited)
	return a, nil
}

// portFree fails with a hint when the adapter's port is taken.
func portFree(ctx context.Context, cfg AdapterProcessConfig) error {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err == nil {
		return ln.Close()
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("local adapter address %s: %w", cfg.Listen, err)
	}
	hctx, cancel := context.WithTimeout(ctx, adapterCheckTimeout)
	defer cancel()
	if cfg.Client != nil && cfg.Client.Reachable(hctx) == nil {
		return fmt.Errorf("%w: %s already answers as an adapter; stop that adapter, or start without --adapter to use it, or give this one another port with --local-agent-endpoint http://127.0.0.1:<port>/run-task", ErrAdapterPortBusy, cfg.Listen)
	}
	return fmt.Errorf("%w: another program listens on %s; give the adapter another port with --local-agent-endpoint http://127.0.0.1:<port>/run-task", ErrAdapterPortBusy, cfg.Listen)
}

// spawn starts one adapter process with a new token, which the client
// sends from now on; exited is closed when the process ends, and its token
// file is deleted then.
func (a *AdapterProcess) spawn() (chan struct{}, error) {
	extra, err := ReadAdapterEnvFile(a.cfg.EnvFile)
	if err != nil {
		return nil, err
	}
	tokenFile, token, err := a.tokens.issue()
	if err != nil {
		return nil, err
	}
	// The previous adapter is gone: no request in flight carries its token.
	a.cfg.Client.SetAuthToken(token)
	args := append([]string{"--provider", a.cfg.Provider, "--listen", a.cfg.Listen, adapterTokenFlag, tokenFile}, a.cfg.Args...)
	cmd := exec.Command(a.cfg.Binary, args...)
	cmd.Stdout, cmd.Stderr = a.cfg.Output, a.cfg.Output
	// A variable of the file wins over the runtime's own of the same name.
	cmd.Env = append(adapterEnv(), extra...)
	cmd.SysProcAttr = adapterSysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = os.Remove(tokenFile)
		return nil, fmt.Errorf("start the local adapter %s: %w", a.cfg.Binary, err)
	}
	exited := make(chan struct{})
	a.mu.Lock()
	a.cmd, a.exited = cmd, exited
	a.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		_ = os.Remove(tokenFile)
		close(exited)
	}()
	return exited, nil
}

// adapterEnv is the runtime's environment without anything that could
// carry a credential of the runtime's: the adapter never sees one.
func adapterEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if key, _, _ := strings.Cut(kv, "="); runtimeOnlyEnv[key] {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// waitHealthy waits until the adapter answers, or fails if it exits first.
func (a *AdapterProcess) waitHealthy(ctx context.Context, exited chan struct{}) error {
	deadline := time.Now().Add(adapterStartWait)
	for {
		hctx, cancel := context.WithTimeout(ctx, adapterCheckTimeout)
		err := a.cfg.Client.Reachable(hctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("the local adapter exited at start (%s); its output above says why", a.exitState())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the local adapter did not answer at %s within %s", a.cfg.Listen, adapterStartWait)
		}
	}
}

func (a *AdapterProcess) exitState() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil || a.cmd.ProcessState == nil {
		return "running"
	}
	return a.cmd.ProcessState.String()
}

// supervise restarts the adapter whenever it exits, with a growing delay
// while it keeps exiting soon after its start.
func (a *AdapterProcess) supervise(ctx context.Context, exited chan struct{}) {
	defer close(a.done)
	backoff := bus.Backoff{Initial: adapterRestartMin, Max: adapterRestartMax}
	started := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-exited:
		}
		if time.Since(started) > adapterStable {
			backoff.Reset()
		}
		delay := backoff.Next()
		a.log.Warn().Str("exit", a.exitState()).Dur("restart_in_ms", delay).Msg("local adapter exited; starting it again")
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		var err error
		for exited, err = a.spawn(); err != nil; exited, err = a.spawn() {
			delay := backoff.Next()
			a.log.Error().Err(err).Dur("retry_in_ms", delay).Msg("local adapter not started")
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
		}
		started = time.Now()
	}
}

// Stop stops supervising and stops the adapter: SIGTERM lets a running task
// finish within StopGrace, then SIGKILL.
func (a *AdapterProcess) Stop() {
	a.cancel()
	<-a.done
	defer a.tokens.removeAll()
	a.mu.Lock()
	cmd, exited := a.cmd, a.exited
	a.mu.Unlock()
	select {
	case <-exited:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(a.cfg.StopGrace):
		a.kill()
		<-exited
	}
}

func (a *AdapterProcess) kill() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd != nil && a.cmd.Process != nil {
		_ = a.cmd.Process.Kill()
	}
}
