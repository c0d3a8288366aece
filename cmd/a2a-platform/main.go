// Command a2a-platform runs the A2A Mesh platform (`up`: everything in one
// process around an embedded NATS server; `serve`: one service against an
// external NATS) and administers it over its HTTP API.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/a2amesh/a2amesh/internal/apiclient"
	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/version"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The agent cards show the version of the program that serves them.
	platform.Version = version.String()
	// Errors reach people in the logs as on standard error: in plain words.
	zerolog.ErrorMarshalFunc = func(err error) any { return cliusage.Plain(err) }
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "a2a-platform:", cliusage.Plain(err))
		os.Exit(cliusage.ExitCode(err))
	}
}

// globals are the flags every verb shares.
type globals struct {
	dataDir   string
	logLevel  string
	apiBase   string
	ownerFile string
	output    string
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "a2a-platform",
		Short:         "The A2A Mesh platform: agents, pairing, task runs and events on NATS JetStream",
		Version:       version.Line(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	home, _ := os.UserHomeDir()
	f := root.PersistentFlags()
	f.StringVar(&g.dataDir, "data-dir", envOr("A2A_MESH_DATA_DIR", filepath.Join(home, ".a2a-mesh")), "data directory (JetStream files, owner credential) [A2A_MESH_DATA_DIR]")
	f.StringVar(&g.logLevel, "log-level", envOr("A2A_MESH_LOG_LEVEL", "info"), "log level: trace, debug, info, warn, error [A2A_MESH_LOG_LEVEL]")
	f.StringVar(&g.apiBase, "api-base", envOr("A2A_MESH_API_BASE", apiclient.DefaultBase), "platform HTTP API for admin verbs [A2A_MESH_API_BASE]")
	f.StringVar(&g.ownerFile, "owner-token-file", envOr("A2A_MESH_OWNER_TOKEN_FILE", ""), "owner credential file for admin verbs (default <data-dir>/owner.token) [A2A_MESH_OWNER_TOKEN_FILE]")
	f.StringVarP(&g.output, "output", "o", envOr("A2A_MESH_OUTPUT", ""), "output of admin verbs: table, json, jsonl (one value per line) or pretty (default: table on a terminal, json otherwise) [A2A_MESH_OUTPUT]")
	root.AddCommand(newUp(g), newServe(g), newAgents(g), newPairingCode(g), newTasks(g), newEvents(g), newConsumers(g), newWebhooks(g), newLogin(g), newBench())
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return g.checkOutput() }
	cliusage.Guard(root)
	return root
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
