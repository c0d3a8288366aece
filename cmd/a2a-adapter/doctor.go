package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/cliusage"
)

// newDoctorCommand is `a2a-adapter doctor`: it checks an agent host the way
// the adapter would use it and prints what to fix.
func newDoctorCommand() *cobra.Command {
	var name string
	var h hostOptions
	var runTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "doctor --provider " + strings.Join(hostProviders, "|"),
		Short: "Check that an agent host is installed, answers, and has its credentials",
		Long: "doctor checks the agent host a provider drives: that its executable is on PATH and\n" +
			"answers --version, that its credentials are in the environment (or a saved sign-in\n" +
			"exists), that a tiny headless run answers (a real call to the host's model), and for\n" +
			"openclaw and the Hermes API server that the server answers and accepts the key.\n" +
			"It exits non-zero when something must be fixed.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(hostProviders, name) {
				return fmt.Errorf("--provider must be one of %s", strings.Join(hostProviders, ", "))
			}
			home, _ := os.UserHomeDir()
			checks, err := provider.Doctor(cmd.Context(), name, provider.DoctorOptions{
				Binary:       h.binary,
				Env:          os.Environ(),
				Home:         home,
				GatewayURL:   h.gatewayURL,
				HermesAPIURL: h.hermesAPIURL,
				Model:        h.model,
				RunTimeout:   runTimeout,
			})
			if err != nil {
				return err
			}
			if failed := printChecks(cmd.OutOrStdout(), name, checks); failed > 0 {
				return fmt.Errorf("doctor: %d of %d checks failed", failed, len(checks))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "provider", "", "the host provider to check: "+strings.Join(hostProviders, ", "))
	f.StringVar(&h.binary, "host-binary", "", "the host's executable (default: its usual command on PATH)")
	f.StringVar(&h.gatewayURL, "gateway-url", provider.DefaultOpenClawGateway, "openclaw: the gateway's base URL")
	f.StringVar(&h.hermesAPIURL, "hermes-api-url", "", "hermes: check the Hermes API server at this URL instead of hermes")
	f.StringVar(&h.model, "model", "", "the model the adapter passes to the host (--model), used by the headless run")
	f.DurationVar(&runTimeout, "run-timeout", provider.DefaultDoctorRunTimeout, "time limit of the headless run")
	cliusage.CompleteValues(cmd, "provider", hostProviders...)
	return cmd
}

// printChecks writes one line per check, with its fix below, and returns
// how many failed.
func printChecks(w io.Writer, name string, checks []provider.Check) int {
	fmt.Fprintf(w, "a2a-adapter doctor: %s\n", name)
	failed := 0
	for _, c := range checks {
		fmt.Fprintf(w, "  %-5s %-12s %s\n", c.Status, c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(w, "  %-5s %-12s fix: %s\n", "", "", c.Fix)
		}
		if c.Status == provider.CheckFail {
			failed++
		}
	}
	if failed == 0 {
		fmt.Fprintf(w, "Ready: a2a-adapter --provider %s\n", name)
	}
	return failed
}
