package main

import (
	"fmt"
	"net/url"

	"github.com/a2amesh/a2amesh/internal/apiclient"
	"github.com/spf13/cobra"
)

func newEvents(g *globals) *cobra.Command {
	var profileName, since string
	var types []string
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print this agent's CloudEvents as they happen, one JSON object per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.resolve(profileName)
			if err != nil {
				return err
			}
			api, err := platformAPI(p)
			if err != nil {
				return err
			}
			q := url.Values{}
			if since != "" {
				q.Set("since", since)
			}
			for _, t := range types {
				q.Add("type", t)
			}
			return api.StreamEvents(cmd.Context(), apiclient.PathRuntimeEvents, q, func(ev apiclient.Event) error {
				_, err := fmt.Println(string(ev.Data))
				return err
			})
		},
	}
	cmd.Flags().StringVar(&profileName, "profile", "", "profile to use")
	cmd.Flags().StringVar(&since, "since", "", "start this long ago (10m) or at this time (RFC 3339)")
	cmd.Flags().StringSliceVar(&types, "type", nil, "only these event types (repeatable)")
	return cmd
}
