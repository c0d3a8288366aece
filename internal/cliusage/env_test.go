package cliusage

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// tree is a program of two commands for the tests: serve with --nats-url
// and --shutdown-grace (formerly --drain-grace), and a persistent
// --log-level.
func tree(t *testing.T, opts ...EnvOption) (root *cobra.Command, natsURL, logLevel *string, grace *time.Duration, stderr *bytes.Buffer) {
	t.Helper()
	natsURL, logLevel, grace = new(string), new(string), new(time.Duration)
	root = &cobra.Command{Use: "prog", SilenceErrors: true, SilenceUsage: true}
	root.PersistentFlags().StringVar(logLevel, "log-level", "info", "log level")
	serve := &cobra.Command{Use: "serve", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error { return nil }}
	serve.Flags().StringVar(natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS server URL")
	serve.Flags().DurationVar(grace, "shutdown-grace", 10*time.Second, "how long a stop may take")
	Deprecated(serve.Flags(), "drain-grace", "shutdown-grace")
	root.AddCommand(serve)
	BindEnv(root, opts...)
	Guard(root)
	stderr = &bytes.Buffer{}
	root.SetErr(stderr)
	root.SetOut(&bytes.Buffer{})
	return root, natsURL, logLevel, grace, stderr
}

func TestEnvName_IsThePrefixAndTheFlagNameInCapitals(t *testing.T) {
	for flag, want := range map[string]string{"nats-url": "A2A_MESH_NATS_URL", "a2a-base-url": "A2A_MESH_A2A_BASE_URL", "output": "A2A_MESH_OUTPUT"} {
		if got := EnvName(flag); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", flag, got, want)
		}
	}
}

func TestBindEnv_AVariableSetsItsFlagAndTheCommandLineWins(t *testing.T) {
	t.Setenv("A2A_MESH_NATS_URL", "nats://from-env:4222")
	t.Setenv("A2A_MESH_LOG_LEVEL", "debug")
	t.Setenv("A2A_MESH_SHUTDOWN_GRACE", "3s")
	root, natsURL, logLevel, grace, _ := tree(t)
	root.SetArgs([]string{"serve", "--log-level", "warn"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if *natsURL != "nats://from-env:4222" || *grace != 3*time.Second {
		t.Errorf("the variables did not set the flags: --nats-url %q, --shutdown-grace %s", *natsURL, *grace)
	}
	if *logLevel != "warn" {
		t.Errorf("--log-level %q: the variable won over the command line", *logLevel)
	}
	serve, _, _ := root.Find([]string{"serve"})
	if v, ok := FromEnv(serve.Flags().Lookup("nats-url")); !ok || v != "A2A_MESH_NATS_URL" {
		t.Errorf("FromEnv(--nats-url) = %q, %v", v, ok)
	}
	if _, ok := FromEnv(serve.Flags().Lookup("log-level")); ok {
		t.Error("FromEnv says the --log-level given on the command line came from the environment")
	}
}

func TestBindEnv_HelpNamesTheVariableAndTheRealDefault(t *testing.T) {
	t.Setenv("A2A_MESH_NATS_URL", "nats://from-env:4222")
	root, _, _, _, _ := tree(t)
	out := &bytes.Buffer{}
	root.SetOut(out)
	root.SetArgs([]string{"serve", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	for _, want := range []string{"[A2A_MESH_NATS_URL]", `(default "nats://127.0.0.1:4222")`, "[A2A_MESH_SHUTDOWN_GRACE]", "[A2A_MESH_LOG_LEVEL]"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve --help does not show %s:\n%s", want, help)
		}
	}
	if strings.Contains(help, "from-env") || strings.Contains(help, "drain-grace") {
		t.Errorf("serve --help shows the environment's value or a former flag:\n%s", help)
	}
}

func TestBindEnv_AFormerVariableNameStillWorksAndWarns(t *testing.T) {
	t.Setenv("OLD_NATS_URL", "nats://old:4222")
	root, natsURL, _, _, stderr := tree(t, Renamed("OLD_NATS_URL", "nats-url"))
	root.SetArgs([]string{"serve"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if *natsURL != "nats://old:4222" {
		t.Errorf("--nats-url %q: the former variable was not read", *natsURL)
	}
	if !strings.Contains(stderr.String(), "OLD_NATS_URL is deprecated") || !strings.Contains(stderr.String(), "A2A_MESH_NATS_URL") {
		t.Errorf("no notice naming both variables: %q", stderr.String())
	}
}

func TestBindEnv_AValueTheFlagCannotTakeIsAWrongCommandLineNamingTheVariable(t *testing.T) {
	t.Setenv("A2A_MESH_SHUTDOWN_GRACE", "soon")
	root, _, _, _, _ := tree(t)
	root.SetArgs([]string{"serve"})
	err := root.Execute()
	var usage *UsageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "A2A_MESH_SHUTDOWN_GRACE") || !strings.Contains(err.Error(), "prog serve --help") {
		t.Errorf("err = %v, want a usage error naming A2A_MESH_SHUTDOWN_GRACE and the help", err)
	}
}

// The warning pflag prints is checked on the programs themselves
// (e2e/cliconvention_test.go): it does not go through cobra's SetErr.
func TestDeprecated_TheFormerFlagSetsTheCurrentOne(t *testing.T) {
	root, _, _, grace, _ := tree(t)
	root.SetArgs([]string{"serve", "--drain-grace", "7s"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	serve, _, _ := root.Find([]string{"serve"})
	if *grace != 7*time.Second || !serve.Flags().Changed("shutdown-grace") {
		t.Errorf("--drain-grace 7s: --shutdown-grace %s, given %v", *grace, serve.Flags().Changed("shutdown-grace"))
	}
}
