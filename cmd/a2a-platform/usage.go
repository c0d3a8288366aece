package main

import (
	"net/http"
	"net/url"

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
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			setIf(q, "agent_id", agent)
			setIf(q, "from", from)
			setIf(q, "to", to)
			return g.call(cmd.Context(), http.MethodGet, "/usage", q, nil)
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only this agent's runs")
	cmd.Flags().StringVar(&from, "from", "", "first day, YYYY-MM-DD (UTC)")
	cmd.Flags().StringVar(&to, "to", "", "last day, YYYY-MM-DD (UTC)")
	return cmd
}
