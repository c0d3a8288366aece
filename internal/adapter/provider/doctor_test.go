package provider

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkNamed returns the check called name.
func checkNamed(t *testing.T, checks []Check, name string) Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q check in %+v", name, checks)
	return Check{}
}

func TestDoctor_CLIHostFoundWithVersionAndCredentials(t *testing.T) {
	home := t.TempDir()
	checks, err := Doctor(context.Background(), "claude", DoctorOptions{
		Binary: fakeHost(t, "claude"),
		Env:    []string{"PATH=" + os.Getenv("PATH"), "ANTHROPIC_API_KEY=sk-ant-doctor-123456"},
		Home:   home,
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := checkNamed(t, checks, "binary"); c.Status != CheckOK || c.Detail != fakeHost(t, "claude") {
		t.Errorf("binary: %+v", c)
	}
	if c := checkNamed(t, checks, "version"); c.Status != CheckOK || c.Detail != "2.0.14 (Claude Code)" {
		t.Errorf("version: %+v", c)
	}
	c := checkNamed(t, checks, "credentials")
	if c.Status != CheckOK || c.Detail != "ANTHROPIC_API_KEY is set" {
		t.Errorf("credentials: %+v", c)
	}
	for _, c := range checks {
		if strings.Contains(c.Detail+c.Fix, "sk-ant-doctor") {
			t.Errorf("a check shows the key: %+v", c)
		}
	}
}

func TestDoctor_ExplainsBothWaysToAuthenticate(t *testing.T) {
	home := t.TempDir()
	opts := DoctorOptions{Binary: fakeHost(t, "codex"), Env: []string{"PATH=" + os.Getenv("PATH")}, Home: home}
	checks, err := Doctor(context.Background(), "codex", opts)
	if err != nil {
		t.Fatal(err)
	}
	c := checkNamed(t, checks, "credentials")
	if c.Status != CheckWarn || !strings.Contains(c.Detail, "CODEX_API_KEY") || !strings.Contains(c.Fix, "set CODEX_API_KEY") || !strings.Contains(c.Fix, "codex login") {
		t.Fatalf("without a key or a login: %+v", c)
	}

	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".codex", "auth.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	checks, _ = Doctor(context.Background(), "codex", opts)
	if c := checkNamed(t, checks, "credentials"); c.Status != CheckOK || !strings.Contains(c.Detail, "~/.codex/auth.json") {
		t.Fatalf("with a saved login: %+v", c)
	}
}

func TestDoctor_MissingBinarySaysHowToInstall(t *testing.T) {
	checks, err := Doctor(context.Background(), "gemini", DoctorOptions{Binary: filepath.Join(t.TempDir(), "gemini")})
	if err != nil {
		t.Fatal(err)
	}
	c := checkNamed(t, checks, "binary")
	if c.Status != CheckFail || !strings.Contains(c.Fix, "npm install -g @google/gemini-cli") || !strings.Contains(c.Fix, "--host-binary") {
		t.Fatalf("binary: %+v", c)
	}
}

func TestDoctor_BrokenBinaryFailsTheVersionCheck(t *testing.T) {
	broken := writeScript(t, t.TempDir(), "cursor-agent", "echo 'segfault' >&2; exit 3")
	checks, _ := Doctor(context.Background(), "cursor", DoctorOptions{Binary: broken, Env: []string{"PATH=" + os.Getenv("PATH")}})
	if c := checkNamed(t, checks, "version"); c.Status != CheckFail || !strings.Contains(c.Detail, "segfault") {
		t.Fatalf("version: %+v", c)
	}
}

func TestDoctor_OpenClawGateway(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/v1/models":
			http.NotFound(w, r)
		case r.Header.Get("Authorization") != "Bearer "+testGatewayToken:
			w.WriteHeader(http.StatusUnauthorized)
		default:
			w.Write([]byte(`{"object":"list","data":[{"id":"openclaw/main"}]}`))
		}
	}))
	defer srv.Close()
	disabled := httptest.NewServer(http.NotFoundHandler())
	defer disabled.Close()

	tests := []struct {
		name, url, token, status, says string
	}{
		{"works", srv.URL, testGatewayToken, CheckOK, "accepts the key"},
		{"wrong token", srv.URL, "not-the-token-1", CheckFail, "refused the key (HTTP 401)"},
		{"endpoints disabled", disabled.URL, testGatewayToken, CheckFail, "no OpenAI-compatible endpoints"},
		{"not running", "http://" + closedAddr(t), testGatewayToken, CheckFail, "not reachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks, err := Doctor(context.Background(), "openclaw", DoctorOptions{GatewayURL: tt.url, Env: []string{OpenClawTokenEnv + "=" + tt.token}})
			if err != nil {
				t.Fatal(err)
			}
			c := checkNamed(t, checks, "gateway")
			if c.Status != tt.status || !strings.Contains(c.Detail, tt.says) {
				t.Fatalf("gateway: %+v", c)
			}
			if strings.Contains(c.Detail+c.Fix, tt.token) {
				t.Fatalf("the check shows the token: %+v", c)
			}
		})
	}

	checks, _ := Doctor(context.Background(), "openclaw", DoctorOptions{GatewayURL: srv.URL})
	if c := checkNamed(t, checks, "credentials"); c.Status != CheckFail || !strings.Contains(c.Fix, OpenClawTokenEnv) {
		t.Fatalf("without the token: %+v", c)
	}
}

func TestDoctor_UnknownProvider(t *testing.T) {
	if _, err := Doctor(context.Background(), "echo", DoctorOptions{}); err == nil {
		t.Fatal("doctor accepted a provider without a host")
	}
}

// npm installs an empty placeholder of OpenClaw on a Node older than 24.16,
// without a command and without a word; doctor says why openclaw is missing.
func TestDoctor_OpenClawMissingOnAnOldNodeSaysWhy(t *testing.T) {
	bin := t.TempDir()
	writeScript(t, bin, "node", "echo v20.20.2\n")
	checks, _ := Doctor(context.Background(), "openclaw", DoctorOptions{GatewayURL: "http://" + closedAddr(t), Env: []string{"PATH=" + bin}})
	c := checkNamed(t, checks, "binary")
	if c.Status != CheckWarn || !strings.Contains(c.Detail, "v20.20.2") || !strings.Contains(c.Detail, "placeholder") || !strings.Contains(c.Fix, "24.16") {
		t.Fatalf("binary: %+v", c)
	}
	if !nodeAtLeast("v24.16.0", 24, 16) || !nodeAtLeast("v26.1.0", 24, 16) || nodeAtLeast("v24.15.9", 24, 16) || nodeAtLeast("v22.0.0", 24, 16) {
		t.Error("nodeAtLeast compares wrongly")
	}
}

// TestDoctor_AVersionPrintedBeforeTheHostLingersPasses: a host that prints
// its version and then does not exit in time (a background update check
// with no network, a slow machine) answered --version: the check passes
// and says the process was stopped.
func TestDoctor_AVersionPrintedBeforeTheHostLingersPasses(t *testing.T) {
	t.Parallel()
	lingering := writeScript(t, t.TempDir(), "gemini", "echo '0.61.0'; exec sleep 60")
	checks, _ := Doctor(context.Background(), "gemini", DoctorOptions{Binary: lingering, Env: []string{"PATH=" + os.Getenv("PATH"), "GEMINI_API_KEY=doctor-key-123456"}})
	if c := checkNamed(t, checks, "version"); c.Status != CheckOK || !strings.HasPrefix(c.Detail, "0.61.0") || !strings.Contains(c.Detail, "did not exit") {
		t.Fatalf("version: %+v", c)
	}
}
