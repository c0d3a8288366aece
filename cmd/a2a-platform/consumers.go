package main

import (
	"github.com/a2amesh/a2amesh/meshapi"
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
		RunE:  g.sendOp(meshapi.OpConsumersCreate.OpInfo, func([]string) any { return meshapi.CreateConsumerRequest{Name: name, AgentID: agent, Types: types} }),
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
		RunE: g.sendOp(meshapi.OpConsumersList.OpInfo, func([]string) any { return meshapi.ListConsumersRequest{} }),
	}
	del := &cobra.Command{
		Use: "delete <consumer_id>", Short: "Revoke a credential and drop its connections", Args: cobra.ExactArgs(1),
		RunE: g.sendOp(meshapi.OpConsumersDelete.OpInfo, func(args []string) any { return meshapi.DeleteConsumerRequest{ConsumerID: args[0]} }),
	}
	cmd.AddCommand(create, list, del)
	return cmd
}
