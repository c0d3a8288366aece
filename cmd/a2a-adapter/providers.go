package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/a2amesh/a2amesh/internal/adapter/provider"
)

// hostProviders are the agent host providers, in the order help lists them.
var hostProviders = []string{"claude", "codex", "gemini", "cursor", "hermes", "openclaw"}

// cliHostProviders are the host providers that run a host executable.
var cliHostProviders = []string{"claude", "codex", "gemini", "cursor", "hermes"}

// allProviders is every --provider value.
var allProviders = append([]string{"echo", "command"}, hostProviders...)

// hostOptions are the flags of the agent host providers.
type hostOptions struct {
	binary             string
	model              string
	permissionMode     string
	allowedTools       string
	maxTurns           int
	maxBudgetUSD       float64
	sandbox            string
	approvalMode       string
	force              bool
	gatewayURL         string
	openclawAgent      string
	hermesAPIURL       string
	sessionPersistence bool
	stateDir           string
}

// hostFlagProviders names the providers each host flag is for, so that a
// flag given to another provider is refused instead of silently ignored.
var hostFlagProviders = map[string][]string{
	"host-binary":         cliHostProviders,
	"model":               hostProviders,
	"permission-mode":     {"claude"},
	"allowed-tools":       {"claude"},
	"max-turns":           {"claude"},
	"max-budget-usd":      {"claude"},
	"sandbox":             {"codex"},
	"approval-mode":       {"gemini", "codex"},
	"force":               {"cursor"},
	"gateway-url":         {"openclaw"},
	"openclaw-agent":      {"openclaw"},
	"hermes-api-url":      {"hermes"},
	"session-persistence": hostProviders,
	"state-dir":           hostProviders,
}

func (h *hostOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&h.binary, "host-binary", "", "the agent host's executable (default: claude, codex, gemini, cursor-agent or hermes on PATH)")
	f.StringVar(&h.model, "model", "", "model the host uses (claude, codex, gemini, cursor, hermes; openclaw: overrides the agent's model)")
	f.StringVar(&h.permissionMode, "permission-mode", "", "claude: --permission-mode, e.g. acceptEdits (default: Claude Code's setting)")
	f.StringVar(&h.allowedTools, "allowed-tools", "", `claude: tools allowed without asking, e.g. "Read,Edit,Bash(go test:*)"`)
	f.IntVar(&h.maxTurns, "max-turns", 0, "claude: most agent turns per task (0: no limit)")
	f.Float64Var(&h.maxBudgetUSD, "max-budget-usd", 0, "claude: most dollars one task may spend (0: no limit)")
	f.StringVar(&h.sandbox, "sandbox", provider.DefaultCodexSandbox, "codex: read-only, workspace-write or danger-full-access")
	f.StringVar(&h.approvalMode, "approval-mode", "", "gemini: default, auto_edit, yolo or plan (default: Gemini CLI's setting); gemini and codex: mesh, the agent's approval policy decides every tool call")
	f.BoolVar(&h.force, "force", false, "cursor: run commands without asking, unless denied by Cursor's permissions")
	f.StringVar(&h.gatewayURL, "gateway-url", provider.DefaultOpenClawGateway, "openclaw: the gateway's base URL; the token comes from "+provider.OpenClawTokenEnv)
	f.StringVar(&h.openclawAgent, "openclaw-agent", provider.DefaultOpenClawAgent, "openclaw: the gateway agent that runs the tasks")
	f.StringVar(&h.hermesAPIURL, "hermes-api-url", "", "hermes: use the Hermes API server at this URL instead of hermes -z; the key comes from "+provider.HermesAPIKeyEnv)
	f.BoolVar(&h.sessionPersistence, "session-persistence", false, "resume the host's session on the next task of the same conversation")
	f.StringVar(&h.stateDir, "state-dir", defaultStateDir(), "where the adapter keeps its state (the host sessions of --session-persistence)")
}

func defaultStateDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".a2a", "adapter", "state")
}

// checkHostFlags refuses host flags given with a provider they are not for.
func checkHostFlags(cmd *cobra.Command, providerName string) error {
	var wrong []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if users, ok := hostFlagProviders[f.Name]; ok && !slices.Contains(users, providerName) {
			wrong = append(wrong, "--"+f.Name)
		}
	})
	if len(wrong) == 0 {
		return nil
	}
	slices.Sort(wrong)
	return fmt.Errorf("%s not for --provider %s (see a2a-adapter --help)", strings.Join(wrong, ", "), providerName)
}

// newProvider builds the provider o names; argv is the command after --.
func newProvider(o options, argv []string) (provider.Provider, error) {
	if len(argv) > 0 && o.provider != "command" && o.provider != "" {
		return nil, errors.New("a command after -- is only for --provider command")
	}
	switch o.provider {
	case "echo":
		return provider.Echo{}, nil
	case "command":
		if len(argv) == 0 {
			return nil, errors.New("--provider command needs the command after --, e.g. a2a-adapter --provider command -- ./agent.sh")
		}
		return provider.NewCommand(provider.CommandConfig{
			Argv:      argv,
			Env:       os.Environ(),
			KillGrace: o.killGrace,
		})
	case "":
		return nil, fmt.Errorf("--provider is required (%s)", strings.Join(allProviders, ", "))
	}
	if !slices.Contains(hostProviders, o.provider) {
		return nil, fmt.Errorf("unknown --provider %q (use %s)", o.provider, strings.Join(allProviders, ", "))
	}
	return newHostProvider(o)
}

// newHostProvider builds an agent host provider. Credentials are read from
// the adapter's environment here and nowhere else; CLI hosts get that
// environment and read their own.
func newHostProvider(o options) (provider.Provider, error) {
	h := o.host
	var sessions *provider.SessionStore
	if h.sessionPersistence {
		if h.stateDir == "" {
			return nil, errors.New("--session-persistence needs --state-dir (no home directory to default to)")
		}
		var err error
		if sessions, err = provider.OpenSessionStore(h.stateDir, o.provider); err != nil {
			return nil, err
		}
	}
	host := provider.HostConfig{Binary: h.binary, Env: os.Environ(), Sessions: sessions, KillGrace: o.killGrace}
	switch o.provider {
	case "claude":
		return provider.NewClaude(provider.ClaudeConfig{HostConfig: host, PermissionMode: h.permissionMode,
			AllowedTools: h.allowedTools, MaxTurns: h.maxTurns, MaxBudgetUSD: h.maxBudgetUSD, Model: h.model})
	case "codex":
		cfg := provider.CodexConfig{HostConfig: host, Sandbox: h.sandbox, Model: h.model, ApprovalMode: h.approvalMode}
		if h.approvalMode == provider.ApprovalModeMesh {
			hook, err := approveHookCommand()
			if err != nil {
				return nil, err
			}
			cfg.ApproveHook = hook
		}
		return provider.NewCodex(cfg)
	case "gemini":
		cfg := provider.GeminiConfig{HostConfig: host, ApprovalMode: h.approvalMode, Model: h.model}
		if h.approvalMode == provider.ApprovalModeMesh {
			hook, err := approveHookCommand()
			if err != nil {
				return nil, err
			}
			cfg.ApproveHook = hook
		}
		return provider.NewGemini(cfg)
	case "cursor":
		return provider.NewCursor(provider.CursorConfig{HostConfig: host, Force: h.force, Model: h.model})
	case "hermes":
		return provider.NewHermes(provider.HermesConfig{HostConfig: host, Model: h.model,
			APIURL: h.hermesAPIURL, APIKey: os.Getenv(provider.HermesAPIKeyEnv)})
	}
	if err := checkOpenClawListen(o.listen, h.gatewayURL); err != nil {
		return nil, err
	}
	token := os.Getenv(provider.OpenClawTokenEnv)
	if token == "" {
		token = os.Getenv(provider.OpenClawPasswordEnv)
	}
	return provider.NewOpenClaw(provider.OpenClawConfig{GatewayURL: h.gatewayURL, Token: token,
		AgentID: h.openclawAgent, Model: h.model, Sessions: sessions})
}

// checkOpenClawListen refuses to listen where the OpenClaw gateway does: both
// default to port 18789 on loopback, and the adapter would either fail to
// bind or, started first, stand in the gateway's place.
func checkOpenClawListen(listen, gatewayURL string) error {
	u, err := url.Parse(gatewayURL)
	if err != nil {
		return nil // NewOpenClaw explains a bad URL
	}
	gatewayPort := u.Port()
	if gatewayPort == "" {
		gatewayPort = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port != gatewayPort {
		return nil
	}
	if host != u.Hostname() && !(isLoopbackHost(host) && isLoopbackHost(u.Hostname())) {
		return nil
	}
	return fmt.Errorf("--listen %s is the OpenClaw gateway's own address (%s); give the adapter another port, e.g. --listen 127.0.0.1:18790, and pair the runtime with --local-agent-endpoint http://127.0.0.1:18790/run-task", listen, gatewayURL)
}

// isLoopbackHost reports whether host names this machine's loopback; the
// empty host (all interfaces) includes it.
func isLoopbackHost(host string) bool {
	if host == "" || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// approveHookCommand is the command a host runs as its approval hook under
// --approval-mode mesh: this program's approve-hook.
func approveHookCommand() ([]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--approval-mode mesh: find this program for the approval hook: %w", err)
	}
	return []string{self, "approve-hook"}, nil
}
