package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/a2amesh/a2amesh/internal/version"
	"os"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapterclient"
	"github.com/a2amesh/a2amesh/internal/ledger"
	"github.com/a2amesh/a2amesh/internal/profile"
	"github.com/a2amesh/a2amesh/internal/runtimeengine"
	"github.com/spf13/cobra"
)

// statusReport is what `a2a-runtime status` shows. It never holds the token.
type statusReport struct {
	Profile       profile.Public `json:"profile"`
	APIBase       string         `json:"api_base"`
	Endpoint      string         `json:"local_agent_endpoint"`
	Executor      string         `json:"local_executor_type"`
	Platform      string         `json:"platform_connection"`
	PlatformError string         `json:"platform_error,omitempty"`
	LastHeartbeat *time.Time     `json:"last_heartbeat_at,omitempty"`
	// HomeRegion is the agent's home region, as it was at pairing.
	HomeRegion string `json:"home_region,omitempty"`
	// Connection is where a running a2a-runtime start last recorded it was
	// connected.
	Connection    *profile.Connection `json:"connection,omitempty"`
	Adapter       string              `json:"adapter"`
	AdapterError  string              `json:"adapter_error,omitempty"`
	LedgerPath    string              `json:"ledger_path"`
	LedgerBacklog int                 `json:"ledger_backlog"`
	// Version is this a2a-runtime's own version.
	Version string `json:"version"`
}

func newStatus(g *globals) *cobra.Command {
	var profileName, apiBase string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the profile in use, the platform connection and the local adapter",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.resolve(profileName)
			if err != nil {
				return err
			}
			if apiBase != "" {
				p.APIBase = apiBase
			}
			r := gatherStatus(cmd.Context(), p)
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			printStatus(r)
			return nil
		},
	}
	cmd.Flags().StringVar(&profileName, "profile", "", "profile to show (agent_id/runtime_id)")
	cmd.Flags().StringVar(&apiBase, "api-base", "", "override the stored platform API base")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}

func gatherStatus(ctx context.Context, p profile.Profile) statusReport {
	r := statusReport{
		Profile: p.Public(), APIBase: p.APIBase, Endpoint: p.LocalAgentEndpoint, Executor: p.LocalExecutor.Type,
		Platform: "connected", Adapter: "healthy", Version: version.String(),
	}
	if !p.LastHeartbeatAt.IsZero() {
		t := p.LastHeartbeatAt
		r.LastHeartbeat = &t
	}
	r.HomeRegion = p.NATS.Region
	if c := p.Public().Connection; !c.At.IsZero() {
		r.Connection = &c
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if api, err := platformAPI(p); err != nil {
		r.Platform, r.PlatformError = "misconfigured", err.Error()
	} else if _, err := runtimeengine.HTTPHello(ctx, api); err != nil {
		r.Platform, r.PlatformError = "unreachable", err.Error()
		if runtimeengine.IsAuthError(err) {
			r.Platform = "credential refused: pair the same agent again"
		}
	}
	if a, err := adapterclient.New(p.LocalAgentEndpoint); err != nil {
		r.Adapter, r.AdapterError = "misconfigured", err.Error()
	} else if h, err := a.Health(ctx); err != nil {
		r.Adapter, r.AdapterError = "unreachable", err.Error()
	} else if h.Busy {
		r.Adapter = "healthy (busy)"
	}
	if led, err := ledger.New(ledgerDir(), p.AgentID, p.RuntimeID); err == nil {
		r.LedgerPath = led.Path()
		r.LedgerBacklog, _ = led.Backlog()
		_ = led.Close()
	}
	return r
}

func printStatus(r statusReport) {
	fmt.Printf("version:         %s\n", r.Version)
	fmt.Printf("profile:         %s\n", r.Profile.Name)
	fmt.Printf("agent id:        %s\n", r.Profile.AgentID)
	fmt.Printf("runtime id:      %s\n", r.Profile.RuntimeID)
	fmt.Printf("api base:        %s\n", r.APIBase)
	fmt.Printf("platform:        %s\n", withDetail(r.Platform, r.PlatformError))
	if r.LastHeartbeat != nil {
		fmt.Printf("last heartbeat:  %s (%s ago)\n", r.LastHeartbeat.Local().Format(time.RFC3339), time.Since(*r.LastHeartbeat).Round(time.Second))
	} else {
		fmt.Printf("last heartbeat:  never\n")
	}
	fmt.Printf("home region:     %s\n", orNone(r.HomeRegion))
	fmt.Printf("connected:       %s\n", connectionLine(r))
	fmt.Printf("local executor:  %s\n", r.Executor)
	fmt.Printf("local adapter:   %s at %s\n", withDetail(r.Adapter, r.AdapterError), r.Endpoint)
	if a := r.Profile.SupervisedAdapter; a.Provider != "" {
		fmt.Printf("                 a2a-runtime start runs it: %s\n", commandLine(a))
	}
	if r.Adapter == "unreachable" {
		fmt.Printf("                 a running a2a-runtime start claims no task runs until the adapter answers\n")
	}
	fmt.Printf("ledger:          %s (%d reports waiting to be re-sent)\n", r.LedgerPath, r.LedgerBacklog)
}

// connectionLine says where a running runtime is connected, as it last
// recorded it, and what that means: a region other than the home region
// works, slower; HTTP instead of NATS says why.
func connectionLine(r statusReport) string {
	c := r.Connection
	if c == nil {
		return "not recorded (no a2a-runtime start has run with this profile)"
	}
	at := c.At.Local().Format(time.RFC3339)
	if c.Transport != runtimeengine.ModeNATS {
		line := fmt.Sprintf("%s to %s (as of %s)", c.Transport, c.Server, at)
		if c.NATSError != "" {
			line += "\n                 NATS not used: " + c.NATSError
		}
		return line
	}
	region := c.Region
	switch {
	case region == "" && c.Cluster != "":
		region = "none (a server of cluster " + c.Cluster + ", not one of the platform's regions: a site's leaf node, say)"
	case region == "":
		region = "none (a server in no cluster)"
	case r.HomeRegion != "" && region != r.HomeRegion:
		region += " (not the home region " + r.HomeRegion + ": working, with each request crossing to it)"
	}
	return fmt.Sprintf("nats, region %s, server %s (as of %s)", region, c.Server, at)
}

func orNone(s string) string {
	if s == "" {
		return "none given at pairing"
	}
	return s
}

func withDetail(state, detail string) string {
	if detail == "" {
		return state
	}
	return state + " (" + detail + ")"
}
