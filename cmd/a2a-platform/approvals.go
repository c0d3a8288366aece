package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// newAgentPolicy sets or removes an agent's approval policy (PATCH
// /agent-accounts/{id} with approval_policy; docs/approvals.md).
func newAgentPolicy(g *globals) *cobra.Command {
	var rules []string
	var fallback string
	var timeout time.Duration
	var clear bool
	cmd := &cobra.Command{
		Use:   "policy <agent_id>",
		Short: "Decide what an agent's hosts may do without asking (allow, deny, or ask its owner)",
		Long: "Set the agent's approval policy: each --rule is MATCH=DECISION, where MATCH is a tool name, optionally\n" +
			"with a pattern of its input (Read, Bash(git push*), mcp__github__*; * stands for any text) and DECISION\n" +
			"is allow, deny or ask. The first rule that matches a step decides it, else --default (deny when not given).\n" +
			"An ask waits --timeout for the owner (a2a-platform tasks approve / deny), then is a deny.\n" +
			"The flags given replace the policy; --clear removes it.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if clear {
				if len(rules) > 0 || fallback != "" || timeout != 0 {
					return cliusage.Usage(errors.New("--clear removes the policy: give it alone"))
				}
				return g.send(cmd, meshapi.OpAgentsUpdate.OpInfo, meshapi.UpdateAgentRequest{AgentID: args[0], ApprovalPolicy: &mesh.ApprovalPolicy{}})
			}
			if len(rules) == 0 && fallback == "" {
				return cliusage.Usage(errors.New("give --rule MATCH=DECISION (repeatable) and/or --default, or --clear"))
			}
			policy := mesh.ApprovalPolicy{Default: fallback}
			for _, r := range rules {
				i := strings.LastIndexByte(r, '=')
				if i <= 0 {
					return cliusage.Usage(fmt.Errorf("--rule %q: write MATCH=DECISION, e.g. 'Bash(git push*)=ask'", r))
				}
				policy.Rules = append(policy.Rules, mesh.ApprovalRule{Match: r[:i], Decision: r[i+1:]})
			}
			if timeout != 0 {
				if timeout < time.Second || timeout%time.Second != 0 {
					return cliusage.Usage(fmt.Errorf("--timeout %s: give whole seconds, at least 1s", timeout))
				}
				policy.TimeoutSeconds = int(timeout / time.Second)
			}
			return g.send(cmd, meshapi.OpAgentsUpdate.OpInfo, meshapi.UpdateAgentRequest{AgentID: args[0], ApprovalPolicy: &policy})
		},
	}
	cmd.Flags().StringArrayVar(&rules, "rule", nil, "MATCH=DECISION, in the order they are tried (repeatable)")
	cmd.Flags().StringVar(&fallback, "default", "", "what a step no rule matches gets: allow, deny or ask (default deny)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long an ask waits for the owner before it is a deny (default 10m)")
	cmd.Flags().BoolVar(&clear, "clear", false, "remove the policy")
	return cmd
}
