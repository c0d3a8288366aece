package provider

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

func toolTask(t *testing.T) *Task {
	t.Helper()
	req := adapterapi.RunTaskRequest{TaskRunID: "r1", ConversationID: "c1", Input: json.RawMessage(`{"text":"hi"}`),
		Tools: &adapterapi.Tools{MCPURL: "http://127.0.0.1:4321/mcp", Capability: "a2acap_secret", FolderHeader: "X-A2A-Run-Folder"}}
	raw, _ := json.Marshal(req)
	task := NewTask(req, raw, t.TempDir(), "")
	if err := task.PrepareDirs(); err != nil {
		t.Fatal(err)
	}
	return task
}

func TestTools_ClaudeGetsAnMCPConfigFileAndNoSecretInArgs(t *testing.T) {
	task := toolTask(t)
	if strings.Contains(string(task.TaskJSON()), "a2acap_secret") {
		t.Fatal("the task JSON carries the capability")
	}
	args, err := claudeMCPArgs(task)
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 2 || args[0] != "--mcp-config" || strings.Contains(strings.Join(args, " "), "a2acap_secret") {
		t.Fatalf("args = %v", args)
	}
	b, err := os.ReadFile(args[1])
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	s := cfg.MCPServers[mcpServerName]
	if s.Type != "http" || s.URL != "http://127.0.0.1:4321/mcp" || s.Headers["Authorization"] != "Bearer a2acap_secret" || s.Headers["X-A2A-Run-Folder"] != task.Workdir {
		t.Fatalf("config = %s", b)
	}
	if fi, _ := os.Stat(args[1]); fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file mode %v", fi.Mode().Perm())
	}
}

func TestTools_CodexGetsConfigOverridesAndTheCapabilityInItsEnvironment(t *testing.T) {
	task := toolTask(t)
	args, env := codexMCPArgs(task)
	joined := strings.Join(args, " ")
	if strings.Contains(joined, "a2acap_secret") {
		t.Fatalf("args carry the capability: %v", args)
	}
	// Codex waits 10 s for a server's handshake and 60 s for a tool call
	// unless told: a loaded machine passes the first (the run then starts
	// without the mesh's tools), and send_task with wait the second.
	for _, want := range []string{`mcp_servers.a2a_mesh.url="http://127.0.0.1:4321/mcp"`, `mcp_servers.a2a_mesh.bearer_token_env_var="A2A_MESH_TOOLS_CAPABILITY"`,
		`mcp_servers.a2a_mesh.startup_timeout_sec=30`, `mcp_servers.a2a_mesh.tool_timeout_sec=1860`} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	if !slices.Equal(env, []string{"A2A_MESH_TOOLS_CAPABILITY=a2acap_secret"}) {
		t.Fatalf("env = %v", env)
	}
	c := &Codex{}
	c.cfg.Sandbox = "workspace-write"
	full := c.args(task, "sess")
	if i, j := slices.Index(full, "-c"), slices.Index(full, "resume"); i < 0 || j < i {
		t.Fatalf("overrides must precede resume: %v", full)
	}
}

func TestTools_CommandGetsTheConfigFileInItsEnvironmentAndNotTheCapability(t *testing.T) {
	task := toolTask(t)
	env, err := commandMCPEnv(task)
	if err != nil {
		t.Fatal(err)
	}
	path, ok := strings.CutPrefix(strings.Join(env, ""), "A2A_MCP_CONFIG=")
	if len(env) != 1 || !ok || strings.Contains(env[0], "a2acap_secret") {
		t.Fatalf("env = %v", env)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), `"Authorization":"Bearer a2acap_secret"`) {
		t.Fatalf("config = %s %v", b, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file mode %v", fi.Mode().Perm())
	}
	task.Request.Tools = nil
	if env, _ := commandMCPEnv(task); env != nil {
		t.Fatalf("env without tools = %v", env)
	}
}

func TestTools_ClaudeAllowsTheMeshToolsBesideTheConfiguredOnes(t *testing.T) {
	for _, tc := range []struct{ configured, want string }{{"", "mcp__a2a_mesh"}, {"Read,Bash", "Read,Bash,mcp__a2a_mesh"}} {
		c := &Claude{cfg: ClaudeConfig{AllowedTools: tc.configured}}
		args := c.args("", "", true)
		i := slices.Index(args, "--allowedTools")
		if i < 0 || args[i+1] != tc.want || slices.Index(args[i+1:], "--allowedTools") >= 0 {
			t.Errorf("configured %q: args %v, want one --allowedTools %s", tc.configured, args, tc.want)
		}
		if without := c.args("", "", false); tc.configured == "" && slices.Contains(without, "--allowedTools") {
			t.Errorf("without the mesh's tools: %v", without)
		}
	}
}
