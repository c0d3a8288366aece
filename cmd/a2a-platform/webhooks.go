package main

import (
	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/spf13/cobra"
)

func newWebhooks(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "webhooks", Short: "Subscribe HTTP endpoints to events"}
	var target, secretValue, agent, task, state string
	var types []string
	create := &cobra.Command{
		Use:   "create",
		Short: "Subscribe an endpoint (the signing secret is printed once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.send(cmd, meshapi.OpWebhooksCreate.OpInfo, meshapi.CreateWebhookRequest{
				URL: target, Secret: secretValue, AgentID: agent, TaskRunID: task, Types: types,
			})
		},
	}
	create.Flags().StringVar(&target, "url", "", "endpoint receiving the deliveries (required)")
	create.Flags().StringVar(&secretValue, "secret", "", "signing secret, 16+ bytes (default: generated)")
	create.Flags().StringVar(&agent, "agent", "", "only this agent's events")
	create.Flags().StringVar(&task, "task", "", "only this task run's events")
	create.Flags().StringSliceVar(&types, "type", nil, "only these event types (repeatable)")
	_ = create.MarkFlagRequired("url")
	list := &cobra.Command{
		Use: "list", Short: "List webhook subscriptions", Args: cobra.NoArgs,
		RunE: g.sendOp(meshapi.OpWebhooksList.OpInfo, func([]string) any { return meshapi.ListWebhooksRequest{} }),
	}
	del := &cobra.Command{
		Use: "delete <webhook_id>", Short: "Remove a subscription", Args: cobra.ExactArgs(1),
		RunE: g.sendOp(meshapi.OpWebhooksDelete.OpInfo, func(args []string) any { return meshapi.WebhookRequest{WebhookID: args[0]} }),
	}
	deliveries := &cobra.Command{
		Use: "deliveries <webhook_id>", Short: "List deliveries that failed at least once (retrying, dead, delivered)", Args: cobra.ExactArgs(1),
		Annotations: listing,
		RunE:        g.sendOp(meshapi.OpWebhooksDeliveries.OpInfo, func(args []string) any { return meshapi.ListDeliveriesRequest{WebhookID: args[0], State: state} }),
	}
	deliveries.Flags().StringVar(&state, "state", "", "only this state: retrying, dead or delivered")
	cliusage.CompleteValues(deliveries, "state", "retrying", "dead", "delivered")
	redrive := &cobra.Command{
		Use: "redrive <webhook_id> <delivery_id>", Short: "Send a dead-lettered delivery again", Args: cobra.ExactArgs(2),
		RunE: g.sendOp(meshapi.OpWebhooksRedrive.OpInfo, func(args []string) any { return meshapi.RedriveRequest{WebhookID: args[0], DeliveryID: args[1]} }),
	}
	cmd.AddCommand(create, list, del, deliveries, redrive)
	return cmd
}
