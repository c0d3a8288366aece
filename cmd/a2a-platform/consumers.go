package main

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/a2amesh/a2amesh/internal/restclient"
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

// send calls op's REST route with req (restclient.Client.Call) and prints
// the answer; a route that answers with no body prints "done".
// sendOp is the RunE of a command that sends op, its request made from
// the command's arguments by req, and prints the answer as send does.
func (g *globals) sendOp(op *meshapi.OpInfo, req func(args []string) any) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error { return g.send(cmd, op, req(args)) }
}

func (g *globals) send(cmd *cobra.Command, op *meshapi.OpInfo, req any) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), restclient.DefaultTimeout)
	defer cancel()
	var out json.RawMessage
	if err := c.Call(ctx, op, req, &out); err != nil {
		return err
	}
	if op.REST.Status == http.StatusNoContent {
		cmd.Println("done")
		return nil
	}
	return g.print(out)
}
