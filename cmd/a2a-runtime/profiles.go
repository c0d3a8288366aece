package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/spf13/cobra"
)

func newProfiles(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "profiles", Short: "List local profiles, choose the active one, remove those the platform refuses"}
	var offline bool
	var output string
	var fields []string
	list := &cobra.Command{
		Use: "list", Short: "List local profiles with their agent and whether the platform still takes them (the active one is marked *)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := g.store().Load()
			if err != nil {
				return err
			}
			names := f.Names()
			checks := make([]profileCheck, len(names))
			if !offline {
				checks = checkProfiles(cmd.Context(), f, names)
			}
			if output != cliusage.OutputTable || len(fields) > 0 {
				return printProfiles(cmd.OutOrStdout(), output, fields, f, names, checks, offline)
			}
			refused := 0
			for i, name := range names {
				mark := " "
				if name == f.ActiveProfile {
					mark = "*"
				}
				p := f.Profiles[name]
				c := checks[i]
				if c.refused() {
					refused++
				}
				fmt.Printf("%s %s  %s  %s  %s  %s\n", mark, name, c.agentName(), c.state(offline), p.APIBase, p.LocalExecutor.Type)
			}
			if refused > 0 {
				fmt.Printf("The platform refuses %d of these profiles; remove them with: a2a-runtime profiles prune\n", refused)
			}
			return nil
		},
	}
	list.Flags().BoolVar(&offline, "offline", false, "do not ask the platforms whether the profiles still work")
	cliusage.OutputFlag(list, list.Flags(), &output, cliusage.OutputTable, "output: table (for people), json or jsonl (one profile per line, for scripts)",
		cliusage.OutputTable, cliusage.OutputJSON, cliusage.OutputJSONL)
	cliusage.FieldsFlag(list.Flags(), &fields)
	use := &cobra.Command{
		Use: "use <agent_id/runtime_id>", Short: "Make a profile the active one", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.store().Use(args[0]); err != nil {
				return err
			}
			fmt.Printf("active profile: %s\n", args[0])
			return nil
		},
	}
	prune := &cobra.Command{
		Use: "prune", Short: "Remove the profiles whose credential the platform refuses (revoked, replaced, or of a deleted agent)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store := g.store()
			f, err := store.Load()
			if err != nil {
				return err
			}
			names := f.Names()
			removed := 0
			for i, c := range checkProfiles(cmd.Context(), f, names) {
				switch {
				case c.refused():
					if err := store.Remove(names[i]); err != nil {
						return err
					}
					removed++
					fmt.Printf("removed %s  %s  %s\n", names[i], c.agentName(), c.state(false))
				case c.err != nil:
					fmt.Printf("kept %s: %s\n", names[i], c.state(false))
				}
			}
			if removed == 0 {
				fmt.Println("no profile is refused by its platform; nothing removed")
			}
			return nil
		},
	}
	cmd.AddCommand(list, use, prune)
	return cmd
}

// profileRow is one profile as profiles list -o json prints it. It never
// holds the credential.
type profileRow struct {
	Name              string `json:"name"`
	Active            bool   `json:"active"`
	AgentID           string `json:"agent_id"`
	RuntimeID         string `json:"runtime_id"`
	AgentName         string `json:"agent_name,omitempty"`
	AgentDeleted      bool   `json:"agent_deleted,omitempty"`
	State             string `json:"state"`
	APIBase           string `json:"api_base"`
	LocalExecutorType string `json:"local_executor_type"`
}

// printProfiles prints the profiles for scripts: {"profiles": [...]} as
// json, one profile per line as jsonl; with fields, only those fields of
// each (in a table too, as its columns).
func printProfiles(w io.Writer, output string, fields []string, f *profile.File, names []string, checks []profileCheck, offline bool) error {
	rows := make([]profileRow, len(names))
	for i, name := range names {
		p, c := f.Profiles[name], checks[i]
		rows[i] = profileRow{
			Name: name, Active: name == f.ActiveProfile, AgentID: p.AgentID, RuntimeID: p.RuntimeID,
			AgentName: c.name, AgentDeleted: c.deleted, State: c.state(offline), APIBase: p.APIBase, LocalExecutorType: p.LocalExecutor.Type,
		}
	}
	if len(fields) > 0 {
		return printProfileFields(w, output, fields, rows)
	}
	enc := json.NewEncoder(w)
	if output == cliusage.OutputJSONL {
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"profiles": rows})
}

// profileCheckWait bounds how long profiles list and prune wait for the
// platforms' answers.
const profileCheckWait = 3 * time.Second

// profileCheck is what a profile's platform says of it.
type profileCheck struct {
	// name is the agent's name from its public card; empty when unknown.
	name string
	// deleted: the platform has no such agent any more.
	deleted bool
	// err is the platform's answer to the credential, nil when it takes it.
	err error
}

func (c profileCheck) refused() bool { return runtimeengine.IsAuthError(c.err) }

func (c profileCheck) agentName() string {
	switch {
	case c.name != "":
		return strconv.Quote(c.name)
	case c.deleted:
		return "(agent deleted)"
	}
	return "(agent name unknown)"
}

func (c profileCheck) state(offline bool) string {
	switch {
	case offline:
		return "not checked"
	case c.err == nil:
		return "works"
	case c.refused() && c.deleted:
		return "refused: its agent was deleted"
	case c.refused():
		return "refused: revoked or replaced by a newer pairing"
	}
	return "unknown: the platform did not answer (" + cliusage.Plain(c.err) + ")"
}

// checkProfiles asks each profile's platform, at once and for a short
// while, whether it takes the profile's credential and what its agent is
// called.
func checkProfiles(ctx context.Context, f *profile.File, names []string) []profileCheck {
	ctx, cancel := context.WithTimeout(ctx, profileCheckWait)
	defer cancel()
	checks := make([]profileCheck, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { checks[i] = checkProfile(ctx, f.Profiles[name]) })
	}
	wg.Wait()
	return checks
}

func checkProfile(ctx context.Context, p profile.Profile) profileCheck {
	var c profileCheck
	api, err := platformAPI(p)
	if err != nil {
		return profileCheck{err: err}
	}
	_, c.err = runtimeengine.HTTPHello(ctx, api)
	name, status := agentCard(ctx, p.APIBase, p.AgentID)
	c.name, c.deleted = name, status == http.StatusNotFound
	return c
}

func newUnpair(g *globals) *cobra.Command {
	var profileName string
	cmd := &cobra.Command{
		Use:   "unpair",
		Short: "Revoke this runtime on the platform (when reachable) and remove its local profile",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.resolve(profileName)
			if err != nil {
				return err
			}
			api, err := platformAPI(p)
			if err == nil {
				ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
				_, err = api.Do(ctx, http.MethodPost, "/agent-runtimes/runtime/revoke", nil, map[string]any{}, nil)
				cancel()
			}
			if err != nil {
				fmt.Printf("could not revoke on the platform (%v); removing the local profile anyway\n", err)
			} else {
				fmt.Println("revoked on the platform")
			}
			if err := g.store().Remove(p.Name()); err != nil {
				return err
			}
			fmt.Printf("removed profile %s\n", p.Name())
			return nil
		},
	}
	cmd.Flags().StringVar(&profileName, "profile", "", "profile to unpair (default the active one)")
	return cmd
}

// printProfileFields prints only fields of each profile.
func printProfileFields(w io.Writer, output string, fields []string, rows []profileRow) error {
	items := make([]map[string]any, len(rows))
	for i, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &items[i]); err != nil {
			return err
		}
	}
	if err := cliusage.CheckFields(items, fields); err != nil {
		return err
	}
	selected := make([]map[string]any, len(items))
	for i, it := range items {
		selected[i] = cliusage.SelectFields(it, fields)
	}
	enc := json.NewEncoder(w)
	switch output {
	case cliusage.OutputJSONL:
		for _, it := range selected {
			if err := enc.Encode(it); err != nil {
				return err
			}
		}
		return nil
	case cliusage.OutputJSON:
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"profiles": selected})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(fields, "\t")))
	for _, it := range selected {
		cells := make([]string, len(fields))
		for i, f := range fields {
			cells[i] = fmt.Sprint(it[f])
			if it[f] == nil || it[f] == "" {
				cells[i] = "-"
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
