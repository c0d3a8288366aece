package main

import (
	"context"
	"net/http"
	"net/url"

	"github.com/a2amesh/a2amesh/internal/apiclient"
	"github.com/spf13/cobra"
)

func newConsumers(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "consumers", Short: "Credentials that read events straight from NATS"}
	var name, agent string
	var types []string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a NATS credential that may read events (printed once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			body := map[string]any{"name": name}
			if agent != "" {
				body["agent_id"] = agent
			}
			if len(types) > 0 {
				body["types"] = types
			}
			return g.call(cmd.Context(), http.MethodPost, "/consumers", nil, body)
		},
	}
	create.Flags().StringVar(&name, "name", "", "what the credential is for (required)")
	f := create.Flags()
	f.StringVar(&agent, "agent", "", "only this agent's events (default: every agent's)")
	f.StringSliceVar(&types, "type", nil, "only the kinds of these event types, e.g. task_run.completed (repeatable)")
	// The first names of --agent and --type, before they were named as
	// webhooks create and events tail name them: still taken, hidden,
	// with a warning.
	f.StringVar(&agent, "filter-agent", "", "only this agent's events")
	f.StringSliceVar(&types, "filter-type", nil, "only the kinds of these event types")
	_ = f.MarkDeprecated("filter-agent", "use --agent")
	_ = f.MarkDeprecated("filter-type", "use --type")
	_ = create.MarkFlagRequired("name")
	list := &cobra.Command{
		Use: "list", Short: "List event consumer credentials", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.call(cmd.Context(), http.MethodGet, "/consumers", nil, nil)
		},
	}
	del := &cobra.Command{
		Use: "delete <consumer_id>", Short: "Revoke a credential and drop its connections", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.callNoContent(cmd, http.MethodDelete, "/consumers/"+url.PathEscape(args[0]))
		},
	}
	cmd.AddCommand(create, list, del)
	return cmd
}

// callNoContent runs a call whose success answer is 204 and says so.
func (g *globals) callNoContent(cmd *cobra.Command, method, path string) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), apiclient.DefaultTimeout)
	defer cancel()
	if _, err := c.Do(ctx, method, path, nil, nil, nil); err != nil {
		return err
	}
	cmd.Println("done")
	return nil
}
