package main

import (
	"fmt"
	"net/url"
	"os"

	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newEvents(g *globals) *cobra.Command {
	var profileName, since string
	var types []string
	follow := func(cmd *cobra.Command, _ []string) error {
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
		return api.StreamEvents(cmd.Context(), restclient.PathRuntimeEvents, q, func(ev restclient.Event) error {
			_, err := fmt.Println(string(ev.Data))
			return err
		})
	}
	tail := &cobra.Command{
		Use:   "tail",
		Short: "Print this agent's CloudEvents as they happen, one JSON object per line",
		Args:  cobra.NoArgs,
		RunE:  follow,
	}
	flags := func(f *pflag.FlagSet) {
		f.StringVar(&profileName, "profile", "", "profile to use")
		f.StringVar(&since, "since", "", "start this long ago (10m) or at this time (RFC 3339)")
		f.StringSliceVar(&types, "type", nil, "only these event types (repeatable)")
	}
	flags(tail.Flags())
	// events alone followed the events before it named its verb, as
	// a2a-platform events tail does: it still does, with a warning.
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Follow this agent's CloudEvents",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(os.Stderr, "a2a-runtime: events without a verb is deprecated: use a2a-runtime events tail")
			return follow(cmd, args)
		},
	}
	flags(cmd.Flags())
	cmd.Flags().VisitAll(func(f *pflag.Flag) { f.Hidden = true })
	cmd.AddCommand(tail)
	return cmd
}
