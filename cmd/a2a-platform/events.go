package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"

	"github.com/a2amesh/a2amesh/internal/apiclient"
	"github.com/spf13/cobra"
)

func newEvents(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "events", Short: "Follow the platform's CloudEvents"}
	var agent, task, since, output string
	var types []string
	tail := &cobra.Command{
		Use:   "tail",
		Short: "Print CloudEvents as they happen, one per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "json" && output != "pretty" {
				return fmt.Errorf("--output must be json or pretty")
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			q := url.Values{}
			setIf(q, "agent_id", agent)
			setIf(q, "task_run_id", task)
			setIf(q, "since", since)
			for _, t := range types {
				q.Add("type", t)
			}
			return c.StreamEvents(cmd.Context(), apiclient.PathEvents, q, func(ev apiclient.Event) error {
				if output == "pretty" {
					var buf bytes.Buffer
					if json.Indent(&buf, ev.Data, "", "  ") == nil {
						_, err := fmt.Fprintln(os.Stdout, buf.String())
						return err
					}
				}
				_, err := fmt.Fprintln(os.Stdout, string(ev.Data))
				return err
			})
		},
	}
	f := tail.Flags()
	f.StringVar(&agent, "agent", "", "only this agent's events")
	f.StringVar(&task, "task", "", "only this task run's events")
	f.StringSliceVar(&types, "type", nil, "only these event types (e.g. task_run.completed; repeatable)")
	f.StringVar(&since, "since", "", "start this long ago (10m) or at this time (RFC 3339) instead of now")
	f.StringVarP(&output, "output", "o", "json", "json (one event per line) or pretty")
	cmd.AddCommand(tail)
	return cmd
}
