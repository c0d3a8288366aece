package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/runtime/adapterclient"
	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/internal/runtime/runtimeengine"
	"github.com/a2amesh/a2amesh/internal/version"
	"github.com/spf13/cobra"
)

// statusReport is what `a2a-runtime status` shows. It never holds the token.
type statusReport struct {
	Profile profile.Public `json:"profile"`
	// APIBase, Endpoint and SupervisedAdapter are those in use: a running
	// start's, which its flags may have changed, else the stored ones. The
	// stored ones follow when they differ.
	APIBase                 string                     `json:"api_base"`
	StoredAPIBase           string                     `json:"stored_api_base,omitempty"`
	Endpoint                string                     `json:"local_agent_endpoint"`
	StoredEndpoint          string                     `json:"stored_local_agent_endpoint,omitempty"`
	SupervisedAdapter       profile.SupervisedAdapter  `json:"supervised_adapter,omitzero"`
	StoredSupervisedAdapter *profile.SupervisedAdapter `json:"stored_supervised_adapter,omitempty"`
	// RunningStart is the a2a-runtime start running with this profile, as
	// it recorded itself; nil when none runs.
	RunningStart  *runningStart `json:"running_start,omitempty"`
	Executor      string        `json:"local_executor_type"`
	Platform      string        `json:"platform_connection"`
	PlatformError string        `json:"platform_error,omitempty"`
	LastHeartbeat *time.Time    `json:"last_heartbeat_at,omitempty"`
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

// runningStart is an a2a-runtime start at work with the profile.
type runningStart struct {
	PID int `json:"pid"`
}

func newStatus(g *globals) *cobra.Command {
	var profileName, apiBase, output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the profile in use, the platform connection and the local adapter",
		Long: "Show the profile in use, the platform connection and the local adapter, as a running a2a-runtime start\n" +
			"uses them (its flags may change the stored ones), else as stored. Exits 3 when the platform refuses the credential.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.resolve(profileName)
			if err != nil {
				return err
			}
			r, refused := gatherStatus(cmd.Context(), p, apiBase)
			if output != cliusage.OutputTable {
				enc := json.NewEncoder(os.Stdout)
				if output == cliusage.OutputJSON {
					enc.SetIndent("", "  ")
				}
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				printStatus(r)
			}
			if refused != nil {
				p.APIBase = r.APIBase
				return whyRefused(p, reauthHint(refused))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&profileName, "profile", "", "profile to show (agent_id/runtime_id)")
	cmd.Flags().StringVar(&apiBase, "api-base", "", "override the platform API base (default: the running start's, else the stored one)")
	cliusage.OutputFlag(cmd, cmd.Flags(), &output, cliusage.OutputTable, "output: table (for people), json or jsonl (on one line) for scripts",
		cliusage.OutputTable, cliusage.OutputJSON, cliusage.OutputJSONL)
	cliusage.DeprecatedSwitch(cmd.Flags(), "json", "output", cliusage.OutputJSON)
	return cmd
}

// gatherStatus checks the platform and the adapter a running start uses
// (else those stored in p; apiBase, when given, replaces the platform's
// address). refused is the platform's refusal of the credential.
func gatherStatus(ctx context.Context, p profile.Profile, apiBase string) (r statusReport, refused error) {
	running := startRunning(p.Connection)
	stored := p.EffectiveAdapter(profile.AdapterOverrides{})
	local := p.AdapterInEffect(running)
	r = statusReport{
		Profile: p.Public(), APIBase: p.APIBaseInEffect(running), Endpoint: local.Endpoint, SupervisedAdapter: local.Supervised,
		Executor: p.LocalExecutor.Type, Platform: "connected", Adapter: "healthy", Version: version.String(),
	}
	if running {
		r.RunningStart = &runningStart{PID: p.Connection.PID}
	}
	if apiBase != "" {
		r.APIBase = apiBase
	}
	if r.APIBase != p.APIBase {
		r.StoredAPIBase = p.APIBase
	}
	if local.Endpoint != stored.Endpoint {
		r.StoredEndpoint = stored.Endpoint
	}
	if !sameSupervised(local.Supervised, stored.Supervised) {
		r.StoredSupervisedAdapter = &stored.Supervised
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
	p.APIBase = r.APIBase
	if api, err := platformAPI(p); err != nil {
		r.Platform, r.PlatformError = "misconfigured", err.Error()
	} else if _, err := runtimeengine.HTTPHello(ctx, api); err != nil {
		r.Platform, r.PlatformError = "unreachable", err.Error()
		if runtimeengine.IsAuthError(err) {
			r.Platform, refused = "credential refused: pair the same agent again", err
		}
	}
	if a, err := adapterclient.New(local.Endpoint); err != nil {
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
	return r, refused
}

// startRunning reports whether the a2a-runtime start that recorded c is
// still running on this machine.
func startRunning(c profile.Connection) bool {
	if c.PID <= 0 {
		return false
	}
	// Signal 0 checks that the process exists; EPERM: it does, as
	// another user's.
	err := syscall.Kill(c.PID, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func sameSupervised(a, b profile.SupervisedAdapter) bool {
	return a.Provider == b.Provider && a.Program == b.Program && slices.Equal(a.Args, b.Args)
}

func printStatus(r statusReport) {
	fmt.Printf("version:         %s\n", r.Version)
	fmt.Printf("profile:         %s\n", r.Profile.Name)
	fmt.Printf("agent id:        %s\n", r.Profile.AgentID)
	fmt.Printf("runtime id:      %s\n", r.Profile.RuntimeID)
	if r.RunningStart != nil {
		fmt.Printf("start:           running (pid %d); what follows is what it uses\n", r.RunningStart.PID)
	} else {
		fmt.Printf("start:           not running; what follows is what a2a-runtime start uses without flags\n")
	}
	fmt.Printf("api base:        %s%s\n", r.APIBase, storedNote(r.StoredAPIBase))
	fmt.Printf("platform:        %s\n", withDetail(r.Platform, r.PlatformError))
	if r.LastHeartbeat != nil {
		fmt.Printf("last heartbeat:  %s (%s ago)\n", r.LastHeartbeat.Local().Format(time.RFC3339), time.Since(*r.LastHeartbeat).Round(time.Second))
	} else {
		fmt.Printf("last heartbeat:  never\n")
	}
	fmt.Printf("home region:     %s\n", orNone(r.HomeRegion))
	fmt.Printf("connected:       %s\n", connectionLine(r))
	fmt.Printf("local executor:  %s\n", r.Executor)
	fmt.Printf("local adapter:   %s at %s%s\n", withDetail(r.Adapter, r.AdapterError), r.Endpoint, storedNote(r.StoredEndpoint))
	if a := r.SupervisedAdapter; a.Provider != "" {
		fmt.Printf("                 a2a-runtime start runs it: %s\n", commandLine(a))
	} else if r.StoredSupervisedAdapter != nil {
		fmt.Printf("                 run separately, not by a2a-runtime start\n")
	}
	if s := r.StoredSupervisedAdapter; s != nil {
		stored := "none"
		if s.Provider != "" {
			stored = commandLine(*s)
		}
		fmt.Printf("                 (stored in the profile: %s)\n", stored)
	}
	if r.Adapter == "unreachable" {
		fmt.Printf("                 a running a2a-runtime start claims no task runs until the adapter answers\n")
	}
	fmt.Printf("ledger:          %s (%d reports waiting to be re-sent)\n", r.LedgerPath, r.LedgerBacklog)
}

// storedNote says what the profile stores when what is in use differs.
func storedNote(stored string) string {
	if stored == "" {
		return ""
	}
	return " (stored in the profile: " + stored + ")"
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
