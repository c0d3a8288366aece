package main

import (
	"errors"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/spf13/cobra"
)

// newUsage shows what agents' runs spent (GET /usage).
func newUsage(g *globals) *cobra.Command {
	var agent, from, to string
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Show what agents' runs spent, per agent and day (tokens, cost)",
		Long: "Show the usage agent hosts reported, per agent and UTC day of the runs' creation, and the sum:\n" +
			"input tokens (cached included), output tokens, cached tokens, and the cost where the host gives one.",
		Args:        cobra.NoArgs,
		Annotations: listing,
		RunE:        g.sendOp(meshapi.OpUsageReport.OpInfo, func([]string) any { return meshapi.UsageRequest{AgentID: agent, From: from, To: to} }),
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only this agent's runs")
	cmd.Flags().StringVar(&from, "from", "", "first day, YYYY-MM-DD (UTC)")
	cmd.Flags().StringVar(&to, "to", "", "last day, YYYY-MM-DD (UTC)")
	return cmd
}

// newAgentBudget sets or removes an agent's budget (PATCH
// /agent-accounts/{id} with budget; docs/usage.md, "Budgets").
func newAgentBudget(g *globals) *cobra.Command {
	var runTokens, dayTokens int64
	var runCost, dayCost float64
	var clear bool
	cmd := &cobra.Command{
		Use:   "budget <agent_id>",
		Short: "Limit what an agent's runs may spend, per run and per day (tokens, cost)",
		Long: "Set the agent's budget: a run that passes the per-run limit is canceled, and once the agent's runs\n" +
			"of a day (UTC) have spent the per-day limit, new runs are refused. The flags given replace the budget;\n" +
			"--clear removes it.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			limit := func(tokens int64, cost float64) *mesh.Limit {
				if tokens == 0 && cost == 0 {
					return nil
				}
				return &mesh.Limit{Tokens: tokens, CostUSD: cost}
			}
			budget := mesh.Budget{PerRun: limit(runTokens, runCost), PerDay: limit(dayTokens, dayCost)}
			none := budget == mesh.Budget{}
			if none && !clear {
				return cliusage.Usage(errors.New("give a limit (--per-run-tokens, --per-run-cost, --per-day-tokens, --per-day-cost) or --clear"))
			}
			if !none && clear {
				return cliusage.Usage(errors.New("--clear removes the budget: give it alone"))
			}
			return g.send(cmd, meshapi.OpAgentsUpdate.OpInfo, meshapi.UpdateAgentRequest{AgentID: args[0], Budget: &budget})
		},
	}
	cmd.Flags().Int64Var(&runTokens, "per-run-tokens", 0, "tokens (input plus output) one run may spend, its delegated runs included")
	cmd.Flags().Float64Var(&runCost, "per-run-cost", 0, "US dollars one run may spend, its delegated runs included")
	cmd.Flags().Int64Var(&dayTokens, "per-day-tokens", 0, "tokens the agent's runs of one day (UTC) may spend")
	cmd.Flags().Float64Var(&dayCost, "per-day-cost", 0, "US dollars the agent's runs of one day (UTC) may spend")
	cmd.Flags().BoolVar(&clear, "clear", false, "remove the budget")
	return cmd
}
