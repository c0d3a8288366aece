package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/spf13/cobra"
)

func newEvents(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "events", Short: "Follow the platform's CloudEvents"}
	var agent, task, since string
	var types []string
	tail := &cobra.Command{
		Use:   "tail",
		Short: "Print CloudEvents as they happen: a line each on a terminal, one JSON event per line for scripts (-o jsonl), or -o pretty",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			format := g.format()
			if g.output == outputAuto && format == outputJSON {
				format = outputJSONL // a stream for a script: one event per line
			}
			return c.StreamEvents(cmd.Context(), restclient.PathEvents, q, func(ev restclient.Event) error {
				return printEvent(g.out, format, ev.Data)
			})
		},
	}
	f := tail.Flags()
	f.StringVar(&agent, "agent", "", "only this agent's events")
	f.StringVar(&task, "task", "", "only this task run's events")
	f.StringSliceVar(&types, "type", nil, "only these event types (e.g. task_run.completed; repeatable)")
	f.StringVar(&since, "since", "", "start this long ago (10m) or at this time (RFC 3339) instead of now")
	cmd.AddCommand(tail)
	return cmd
}

// printEvent prints one event (a structured CloudEvent) in a format: table
// is one line of time (local, to the second), type, subject and agent;
// json and jsonl are the event on one line; pretty is the event indented.
func printEvent(w io.Writer, format string, data []byte) error {
	switch format {
	case outputPretty:
		var buf bytes.Buffer
		if json.Indent(&buf, data, "", "  ") == nil {
			_, err := fmt.Fprintln(w, buf.String())
			return err
		}
	case outputTable:
		var ev struct {
			Time          time.Time
			Type, Subject string
			AgentID       string
		}
		if json.Unmarshal(data, &ev) == nil {
			_, err := fmt.Fprintf(w, "%s  %-36s  %s  agent %s\n", ev.Time.Local().Format(time.DateTime), strings.TrimPrefix(ev.Type, mesh.EventTypePrefix), ev.Subject, ev.AgentID)
			return err
		}
	}
	_, err := fmt.Fprintln(w, string(data))
	return err
}
