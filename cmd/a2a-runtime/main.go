// Command a2a-runtime connects an agent on this machine to an A2A Mesh
// platform: it pairs once with a one-time code, then connects outbound,
// claims the agent's task runs and hands each to the local adapter.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/a2amesh/a2amesh/cmd/internal/programcli"
	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/cpuprofile"
	"github.com/a2amesh/a2amesh/internal/gomaxprocs"
	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

// exitReauth: the platform refused the runtime's credential; the other
// codes are cliusage's (1 an error, 2 a wrong command line).
const exitReauth = 3

func main() {
	// Errors reach people in the logs as on standard error: in plain words.
	zerolog.ErrorMarshalFunc = func(err error) any { return cliusage.Plain(err) }
	gomaxprocs.Default(gomaxprocs.Relay)
	stopProfile, err := cpuprofile.Start(os.Getenv(cpuprofile.EnvVar))
	if err != nil {
		fmt.Fprintln(os.Stderr, "a2a-runtime:", err)
		os.Exit(1)
	}
	err = newRoot().Execute()
	stopProfile()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "a2a-runtime:", cliusage.Plain(err))
	if errors.Is(err, runtimeengine.ErrReauth) {
		os.Exit(exitReauth)
	}
	os.Exit(cliusage.ExitCode(err))
}

type globals struct {
	config   string
	logLevel string
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := programcli.Root("a2a-runtime", "Connect an agent on this machine to an A2A Mesh platform", &g.logLevel)
	root.PersistentFlags().StringVar(&g.config, "config", "", "profile file (default ~/.a2a/runtime.json)")
	root.AddCommand(newPair(g), newStart(g), newStatus(g), newProfiles(g), newUnpair(g), newService(g), newEvents(g))
	cliusage.BindEnv(root)
	cliusage.Guard(root)
	return root
}

// home is the user's home directory ($HOME is honoured).
func home() string {
	if h := os.Getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

func (g *globals) store() *profile.Store {
	path := g.config
	if path == "" {
		path = profile.DefaultPath(home())
	}
	return profile.NewStore(path)
}

// resolve finds the profile to use (seed 000: --profile, then active_profile,
// then the only one) and explains what to do when there is none.
func (g *globals) resolve(explicit string) (profile.Profile, error) {
	p, err := g.store().Resolve(explicit)
	if errors.Is(err, profile.ErrNoProfiles) {
		return p, fmt.Errorf("no local A2A connection profile found in %s: generate a pairing code for this agent on the platform and run: echo <PAIRING_CODE> | a2a-runtime pair --api-base <PLATFORM_URL> --adapter <provider>", g.store().Path())
	}
	return p, err
}

// platformAPI is the platform's API as the runtime of profile p.
func platformAPI(p profile.Profile) (*restclient.Client, error) {
	return restclient.New(p.APIBase, restclient.WithRuntimeToken(p.RuntimeToken), restclient.WithUserAgent("a2a-runtime"))
}

func ledgerDir() string { return filepath.Join(home(), ".a2a", "logs") }
