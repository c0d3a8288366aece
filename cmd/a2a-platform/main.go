// Command a2a-platform runs the A2A Mesh platform (`up`: everything in one
// process around an embedded NATS server; `serve`: one service against an
// external NATS) and administers it over its HTTP API.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/a2amesh/a2amesh/cmd/internal/programcli"
	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/cpuprofile"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/restclient"
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
	stopProfile, err := cpuprofile.Start(os.Getenv(cpuprofile.EnvVar))
	if err != nil {
		fmt.Fprintln(os.Stderr, "a2a-platform:", err)
		os.Exit(1)
	}
	err = newRoot().ExecuteContext(ctx)
	stopProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "a2a-platform:", cliusage.Plain(err))
		os.Exit(exitCode(err))
	}
}

// globals are the flags every verb shares.
type globals struct {
	dataDir   string
	logLevel  string
	apiBase   string
	ownerFile string
	output    string
	context   string
	// fields are the fields of each item printed (--fields); none: all.
	fields []string
	// cmd is the command running, whose flags tell what was given; out is
	// where it prints.
	cmd *cobra.Command
	out io.Writer
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := programcli.Root("a2a-platform", "The A2A Mesh platform: agents, pairing, task runs and events on NATS JetStream", &g.logLevel)
	home, _ := os.UserHomeDir()
	f := root.PersistentFlags()
	f.StringVar(&g.dataDir, "data-dir", filepath.Join(home, ".a2a-mesh"), "data directory (JetStream files, owner credential, admin contexts)")
	f.StringVar(&g.apiBase, "api-base", restclient.DefaultBase, "platform HTTP API for admin verbs (default: the context's, else this)")
	f.StringVar(&g.ownerFile, "owner-token-file", "", "owner credential file for admin verbs (default: the context's, else <data-dir>/owner.token)")
	f.StringVar(&g.context, "context", "", "admin context to use instead of the current one (a2a-platform context list)")
	cliusage.OutputFlag(root, f, &g.output, outputAuto, "output of admin verbs: table, json, jsonl (one value per line) or pretty (events tail) (default: table on a terminal, json otherwise)", outputFormats...)
	cliusage.FieldsFlag(f, &g.fields)
	root.AddCommand(newUp(g), newServe(g), newAgents(g), newPairingCode(g), newTasks(g), newUsage(g), newEvents(g), newConsumers(g), newWebhooks(g),
		newLogin(g), newBench(g), newContext(g), newHealthcheck(), newUpgrade(g))
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) { g.cmd, g.out = cmd, cmd.OutOrStdout() }
	_ = root.RegisterFlagCompletionFunc("context", g.completeContexts)
	cliusage.BindEnv(root,
		cliusage.Renamed("A2A_BASE_URL", "a2a-base-url"),
		cliusage.Renamed("A2A_WEBHOOK_URL", "a2a-webhook-url"),
		cliusage.Renamed("A2A_HEALTH_URL", "a2a-health-url"),
		cliusage.Renamed("A2A_RATE_LIMIT_PER_MINUTE", "a2a-rate-limit-per-minute"))
	cliusage.Guard(root)
	return root
}
