package hosts_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/fakemodel"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

func init() {
	realHosts["openclaw"] = realHost{
		name: "openclaw", bin: "openclaw/node_modules/.bin/openclaw", keyEnv: "OPENCLAW_GATEWAY_TOKEN", executor: "openclaw",
		// The gateway's chat completions stream carries the answer only: no
		// tool calls, no retries of the model.
		progress: "*", toolsOutsideAdapter: true,
		configure: func(t *testing.T, home, modelURL string) []string { return nil },
		server:    startOpenClawGateway,
		shell: func(command string) *fakemodel.ToolCall {
			return &fakemodel.ToolCall{Name: "exec", Args: map[string]any{"command": command}}
		},
	}
}

// startOpenClawGateway writes an OpenClaw configuration whose only model
// is the fake model's chat completions API, starts `openclaw gateway` with
// its chat completions endpoint on, waits until it answers, and returns
// the adapter flags that reach it.
func startOpenClawGateway(t *testing.T, l *realLab) []string {
	t.Helper()
	addr := meshtest.FreeAddr(t)
	_, port, _ := splitHostPort(addr)
	l.modelKey = "sk-openclaw-model-7a6b5c4d3e2f1a00"
	writeFile(t, filepath.Join(l.home, ".openclaw", "openclaw.json"), fmt.Sprintf(`{
  gateway: { mode: "local", port: %s, bind: "loopback", auth: { mode: "token" },
    http: { endpoints: { chatCompletions: { enabled: true } } } },
  agents: { defaults: { model: { primary: "fake/fake-model" } } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: %q, api: "openai-completions",
    models: [ { id: "fake-model", name: "Fake", reasoning: false, input: ["text"],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 128000, maxTokens: 4096 } ] } } },
}`, port, l.model.URL+"/v1", l.modelKey))
	// The gateway is the user's own server, with its own temporary folder;
	// the adapter's must stay untouched by what the adapter runs.
	gw := startProcess(t, "openclaw gateway", append(l.hostEnv, l.host.keyEnv+"="+l.secret, "TMPDIR="+t.TempDir()), l.bin, "gateway")
	url := "http://" + addr
	meshtest.Eventually(t, waitHost, func() bool {
		req, _ := http.NewRequest(http.MethodGet, url+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+l.secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { return "the OpenClaw gateway never answered:\n" + gw.output() })
	return []string{"--gateway-url", url}
}

func splitHostPort(addr string) (string, string, error) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			if _, err := strconv.Atoi(addr[i+1:]); err != nil {
				return "", "", err
			}
			return addr[:i], addr[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("no port in %s", addr)
}

func TestRealOpenClaw_TaskProgressArtifactResumeErrorAndCancel(t *testing.T) {
	testRealHost(t, "openclaw")
}
