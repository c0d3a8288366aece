package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/a2amesh/a2amesh/internal/adapter/provider"
)

// newApproveHookCommand is `a2a-adapter approve-hook`: the command Gemini
// CLI runs as its BeforeTool hook under --approval-mode mesh. It reads
// the hook's JSON on stdin, asks the run's tool server, and prints the
// decision; the adapter writes the hook into the conversation folder's
// settings, with the tool server in its environment.
func newApproveHookCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "approve-hook",
		Short: "Ask the mesh whether a host's tool call may run (Gemini CLI's BeforeTool hook)",
		Long: "approve-hook is the hook the adapter gives Gemini CLI under --approval-mode mesh:\n" +
			"it reads the hook's JSON ({tool_name, tool_input, ...}) on stdin, asks the agent's\n" +
			"approval policy on the platform through the run's tool server (" + provider.ToolsURLEnv + ",\n" +
			provider.ToolsCapabilityEnv + "), waits for a person when the policy says ask, and prints\n" +
			`{"decision": "allow"} or {"decision": "deny", "reason": "..."}. It denies when it cannot ask.`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg := provider.HookConfig{MCPURL: os.Getenv(provider.ToolsURLEnv), Capability: os.Getenv(provider.ToolsCapabilityEnv)}
			if err := provider.ApproveHook(ctx, cfg, cmd.InOrStdin(), cmd.OutOrStdout()); err != nil {
				// Exit 2 blocks the tool in Gemini CLI, with stderr as the reason.
				fmt.Fprintln(cmd.ErrOrStderr(), "the mesh's approval hook failed:", err)
				os.Exit(2)
			}
			return nil
		},
	}
}
