package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

// Check statuses.
const (
	// CheckOK means the check passed.
	CheckOK = "ok"
	// CheckWarn means the host may work, but something deserves a look.
	CheckWarn = "warn"
	// CheckFail means the host cannot run tasks until the fix is done.
	CheckFail = "fail"
)

// Check is one finding of a2a-adapter doctor.
type Check struct {
	// Name says what was checked: "binary", "version", "credentials", "gateway".
	Name string
	// Status is CheckOK, CheckWarn or CheckFail.
	Status string
	// Detail says what was found. It never holds a secret's value.
	Detail string
	// Fix says what to do, for a warning or a failure.
	Fix string
}

// DoctorOptions say where a host is and what environment it gets: the same
// values the adapter would start the provider with.
type DoctorOptions struct {
	// Binary overrides the host's executable (--host-binary).
	Binary string
	// Env is the environment the host would get; credentials are looked up
	// in it.
	Env []string
	// Home is the user's home directory, where saved sign-ins live.
	Home string
	// GatewayURL is the OpenClaw gateway (--gateway-url).
	GatewayURL string
	// HermesAPIURL is the Hermes API server (--hermes-api-url), when used.
	HermesAPIURL string
	// HTTPClient probes HTTP hosts. Default: a client with a short timeout.
	HTTPClient *http.Client
	// Model is the model the adapter would pass (--model); the headless
	// run uses it too.
	Model string
	// RunTimeout bounds the headless run. Default DefaultDoctorRunTimeout.
	RunTimeout time.Duration
}

// DefaultDoctorRunTimeout bounds doctor's headless run of a host: enough for
// a CLI to start and answer one short prompt, short enough that a host
// retrying a refused key is reported rather than waited for.
const DefaultDoctorRunTimeout = 45 * time.Second

// doctorPrompt is the task of doctor's headless run.
const doctorPrompt = "This is a connectivity check. Reply with the single word OK and do nothing else."

// doctorTimeout bounds each probe of a server, and node's --version.
const doctorTimeout = 10 * time.Second

// versionTimeout bounds a host's --version: a CLI host loads the whole of
// itself to print it (Gemini CLI, a large Node bundle, has taken more than
// 10 s on a busy machine), and one that does not answer within it is not
// going to run tasks either.
const versionTimeout = 30 * time.Second

// hostSpecs are the CLI hosts doctor knows, by provider name.
var hostSpecs = map[string]hostSpec{
	claudeHost.name: claudeHost,
	codexHost.name:  codexHost,
	geminiHost.name: geminiHost,
	cursorHost.name: cursorHost,
	hermesHost.name: hermesHost,
}

// Doctor checks that provider's host can run tasks: that its executable is
// installed and answers --version, that its credentials are there, that a
// tiny headless run of a CLI host answers within o.RunTimeout, and for
// hosts reached over HTTP that the server answers and accepts the key. It
// returns an error only for a provider it does not know.
func Doctor(ctx context.Context, provider string, o DoctorOptions) ([]Check, error) {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: doctorTimeout}
	}
	switch provider {
	case "openclaw":
		return doctorOpenClaw(ctx, o), nil
	case "hermes":
		if o.HermesAPIURL != "" {
			return doctorHermesAPI(ctx, o), nil
		}
	}
	spec, ok := hostSpecs[provider]
	if !ok {
		return nil, fmt.Errorf("doctor knows the agent host providers claude, codex, gemini, cursor, hermes and openclaw, not %q", provider)
	}
	checks := append(binaryChecks(ctx, spec, o), credentialCheck(spec, o))
	for _, c := range checks {
		if c.Status == CheckFail && c.Name != "credentials" {
			return checks, nil
		}
	}
	fix := "run the host once by hand in a terminal to see what it needs; check its credentials (" + strings.Join(spec.keys, ", ") + ")"
	p, err := newCLIProvider(spec.name, HostConfig{Binary: o.Binary, Env: o.Env, KillGrace: time.Second}, o.Model)
	if err != nil {
		return append(checks, Check{Name: "headless run", Status: CheckFail, Detail: err.Error(), Fix: fix}), nil
	}
	return append(checks, headlessRun(ctx, spec.product, p, o.RunTimeout, fix)), nil
}

// headlessRun runs a tiny task on the host exactly as the adapter would
// (same provider, flags and environment) in a temporary folder: the only
// way to know that the host starts headless, trusts its folder, and that
// the model accepts its credential.
func headlessRun(ctx context.Context, product string, p Provider, timeout time.Duration, fix string) Check {
	if timeout <= 0 {
		timeout = DefaultDoctorRunTimeout
	}
	fail := func(detail string) Check {
		return Check{Name: "headless run", Status: CheckFail, Detail: oneLine(detail, 400), Fix: fix}
	}
	dir, err := os.MkdirTemp("", "a2a-doctor-")
	if err != nil {
		return fail(err.Error())
	}
	defer os.RemoveAll(dir)
	req := adapterapi.RunTaskRequest{TaskRunID: "doctor", ConversationID: "doctor", TaskType: "chat", Input: json.RawMessage(`{"text":` + strconv.Quote(doctorPrompt) + `}`)}
	raw, _ := json.Marshal(req)
	task := NewTask(req, raw, dir, "")
	var mu sync.Mutex
	last := ""
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, err := p.Run(ctx, task, func(pr Progress) {
		mu.Lock()
		defer mu.Unlock()
		last = pr.Message
	})
	mu.Lock()
	defer mu.Unlock()
	switch {
	case ctx.Err() != nil:
		detail := fmt.Sprintf("%s did not answer within %s", product, timeout)
		if last != "" {
			detail += "; its last report: " + last
		}
		return fail(detail)
	case err != nil:
		return fail(err.Error())
	}
	answer, _ := res.Output["text"].(string)
	return Check{Name: "headless run", Status: CheckOK,
		Detail: fmt.Sprintf("answered %s in %.1fs", quoteShort(answer), time.Since(start).Seconds())}
}

// newCLIProvider builds the provider of a CLI host with the settings doctor
// knows.
func newCLIProvider(name string, cfg HostConfig, model string) (Provider, error) {
	switch name {
	case claudeHost.name:
		return NewClaude(ClaudeConfig{HostConfig: cfg, Model: model})
	case codexHost.name:
		return NewCodex(CodexConfig{HostConfig: cfg, Model: model})
	case geminiHost.name:
		return NewGemini(GeminiConfig{HostConfig: cfg, Model: model})
	case cursorHost.name:
		return NewCursor(CursorConfig{HostConfig: cfg, Model: model})
	case hermesHost.name:
		return NewHermes(HermesConfig{HostConfig: cfg, Model: model})
	}
	return nil, fmt.Errorf("no CLI host provider %q", name)
}

// binaryChecks finds the executable and asks for its version.
func binaryChecks(ctx context.Context, spec hostSpec, o DoctorOptions) []Check {
	binary := o.Binary
	if binary == "" {
		binary = spec.binary
	}
	path, err := findHost(spec, binary)
	if err != nil {
		return []Check{{Name: "binary", Status: CheckFail, Detail: binary + " is not on PATH",
			Fix: spec.install + ", or pass --host-binary with its path"}}
	}
	checks := []Check{{Name: "binary", Status: CheckOK, Detail: path}}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = o.Env
	cmd.WaitDelay = time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// The version is on stdout; some hosts print warnings on stderr first.
	version := firstLine(firstNonEmpty(strings.TrimSpace(string(out)), stderr.String()))
	redact := newRedactor(o.Env)
	if err != nil && ctx.Err() != nil && strings.TrimSpace(string(out)) != "" {
		// It answered, then lingered (a background update check with no
		// network, a slow machine): the version is what was asked.
		return append(checks, Check{Name: "version", Status: CheckOK,
			Detail: redact.text(version) + fmt.Sprintf(" (it did not exit within %s after printing it, and was stopped)", versionTimeout)})
	}
	if err != nil {
		checks = append(checks, Check{Name: "version", Status: CheckFail,
			Detail: redact.text(oneLine(fmt.Sprintf("%s --version failed: %v %s", binary, err, version), 300)),
			Fix:    "reinstall " + spec.product + " (" + spec.install + ")"})
		return checks
	}
	if version == "" {
		version = "(no version printed)"
	}
	return append(checks, Check{Name: "version", Status: CheckOK, Detail: redact.text(version)})
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	line, _, _ := strings.Cut(s, "\n")
	return oneLine(line, 200)
}

// credentialCheck looks for the host's key variables and saved sign-in.
// Hosts that can use a sign-in only warn without a key, explaining both ways.
func credentialCheck(spec hostSpec, o DoctorOptions) Check {
	for _, k := range spec.keys {
		if lookupEnv(o.Env, k) != "" {
			return Check{Name: "credentials", Status: CheckOK, Detail: k + " is set"}
		}
	}
	for _, k := range spec.ignoredKeys {
		if lookupEnv(o.Env, k) != "" && savedLogin(spec, o.Home) == "" {
			return Check{Name: "credentials", Status: CheckFail,
				Detail: k + " is set, but " + spec.product + " does not read it in headless runs",
				Fix:    "set " + spec.keys[0] + " in the adapter's environment instead, " + spec.login}
		}
	}
	saved := savedLogin(spec, o.Home)
	var detail, fix string
	if len(spec.keys) > 0 {
		detail = "none of " + strings.Join(spec.keys, ", ") + " is set"
		fix = "set " + spec.keys[0] + " in the adapter's environment, " + spec.login
	} else {
		detail = "no credential variable"
		fix = spec.login
	}
	if saved != "" {
		return Check{Name: "credentials", Status: CheckOK, Detail: detail + "; saved credentials were found at " + saved}
	}
	return Check{Name: "credentials", Status: CheckWarn, Detail: detail + " and no saved credentials were found (a sign-in may be in the system keychain)", Fix: fix}
}

// savedLogin returns the first of the host's sign-in files found under
// home, as ~/<file>, or "".
func savedLogin(spec hostSpec, home string) string {
	if home == "" {
		return ""
	}
	for _, f := range spec.loginFiles {
		if _, err := os.Stat(filepath.Join(home, f)); err == nil {
			return "~/" + f
		}
	}
	return ""
}

// lookupEnv returns the value of name in env, the last one winning as for
// a process.
func lookupEnv(env []string, name string) string {
	value := ""
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			value = v
		}
	}
	return value
}

// doctorOpenClaw checks the token and asks the gateway for its models,
// which it serves only when its OpenAI-compatible endpoints are enabled.
func doctorOpenClaw(ctx context.Context, o DoctorOptions) []Check {
	var checks []Check
	if path := lookPathEnv(o.Env, "openclaw"); path != "" {
		checks = append(checks, Check{Name: "binary", Status: CheckOK, Detail: path})
	} else {
		detail := "openclaw is not on PATH"
		if v := nodeVersion(ctx, o.Env); v != "" && !nodeAtLeast(v, 24, 16) {
			detail += "; Node.js here is " + v + ", and on a Node older than 24.16 `npm install -g openclaw` installs an empty placeholder (0.0.1) without a word"
		}
		checks = append(checks, Check{Name: "binary", Status: CheckWarn, Detail: detail,
			Fix: "fine if the gateway runs elsewhere; otherwise install Node.js >= 24.16, then OpenClaw (`npm install -g openclaw`), and start it with `openclaw gateway`"})
	}
	token := firstNonEmpty(lookupEnv(o.Env, OpenClawTokenEnv), lookupEnv(o.Env, OpenClawPasswordEnv))
	if token == "" {
		return append(checks, Check{Name: "credentials", Status: CheckFail, Detail: OpenClawTokenEnv + " is not set",
			Fix: "set " + OpenClawTokenEnv + " to the gateway token (gateway.auth.token in the OpenClaw config), or " + OpenClawPasswordEnv + " in password mode"})
	}
	checks = append(checks, Check{Name: "credentials", Status: CheckOK, Detail: "the gateway token is set"})
	gateway := strings.TrimRight(firstNonEmpty(o.GatewayURL, DefaultOpenClawGateway), "/")
	probe := probeModels(ctx, o.HTTPClient, "gateway", gateway, token, OpenClawTokenEnv,
		"start the gateway with `openclaw gateway`, or pass --gateway-url",
		"enable gateway.http.endpoints.chatCompletions.enabled: true in the OpenClaw config")
	checks = append(checks, probe)
	if probe.Status != CheckOK {
		return checks
	}
	// A real run through the gateway: its agent's model and keys.
	p, err := NewOpenClaw(OpenClawConfig{GatewayURL: gateway, Token: token, Model: o.Model})
	fix := "check the gateway agent's model and its provider key (`openclaw models status`)"
	if err != nil {
		return append(checks, Check{Name: "headless run", Status: CheckFail, Detail: err.Error(), Fix: fix})
	}
	return append(checks, headlessRun(ctx, "the OpenClaw gateway", p, o.RunTimeout, fix))
}

// nodeVersion returns what `node --version` prints with env's PATH, or ""
// when there is no node.
func nodeVersion(ctx context.Context, env []string) string {
	path := lookPathEnv(env, "node")
	if path == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// lookPathEnv finds name in the PATH of env, the environment the host
// would get, or "".
func lookPathEnv(env []string, name string) string {
	for _, dir := range filepath.SplitList(lookupEnv(env, "PATH")) {
		if p := filepath.Join(dir, name); dir != "" && isExecutable(p) {
			return p
		}
	}
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// nodeAtLeast reports whether a Node.js version ("v24.16.0") is at least
// major.minor.
func nodeAtLeast(version string, major, minor int) bool {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > major || maj == major && mi >= minor
}

// doctorHermesAPI checks the Hermes API server's key and asks it for its
// models.
func doctorHermesAPI(ctx context.Context, o DoctorOptions) []Check {
	token := lookupEnv(o.Env, HermesAPIKeyEnv)
	if token == "" {
		return []Check{{Name: "credentials", Status: CheckFail, Detail: HermesAPIKeyEnv + " is not set",
			Fix: "set " + HermesAPIKeyEnv + " to the key in ~/.hermes/.env (API_SERVER_KEY)"}}
	}
	return []Check{
		{Name: "credentials", Status: CheckOK, Detail: HermesAPIKeyEnv + " is set"},
		probeModels(ctx, o.HTTPClient, "api server", strings.TrimRight(o.HermesAPIURL, "/"), token, HermesAPIKeyEnv,
			"start it with API_SERVER_ENABLED=true `hermes gateway`, or fix --hermes-api-url", "is API_SERVER_ENABLED=true set?"),
	}
}

// probeModels sends GET <base>/v1/models with the bearer token.
func probeModels(ctx context.Context, client *http.Client, name, base, token, tokenEnv, unreachable, notFound string) Check {
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
	if err != nil {
		return Check{Name: name, Status: CheckFail, Detail: err.Error(), Fix: "pass a URL like http://127.0.0.1:18789"}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return Check{Name: name, Status: CheckFail, Detail: "not reachable at " + base + ": " + unwrapURLError(err).Error(), Fix: unreachable}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		return Check{Name: name, Status: CheckOK, Detail: base + " answers and accepts the key"}
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return Check{Name: name, Status: CheckFail, Detail: fmt.Sprintf("%s refused the key (HTTP %d)", base, resp.StatusCode), Fix: "check " + tokenEnv}
	case resp.StatusCode == http.StatusNotFound:
		return Check{Name: name, Status: CheckFail, Detail: base + " has no OpenAI-compatible endpoints (HTTP 404)", Fix: notFound}
	}
	return Check{Name: name, Status: CheckFail, Detail: fmt.Sprintf("%s answered HTTP %d", base, resp.StatusCode)}
}
