package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestGeminiApproval_TheHookGoesBesideTheServerAndLeavesWithIt: under the
// mesh's approval mode the conversation folder's settings get a
// BeforeTool hook for every tool but the mesh's own, running the hook
// command with the tool server by variable (no secret in the file), with
// hooks switched on; the folder's own hooks stay, and after the run the
// settings are as they were.
func TestGeminiApproval_TheHookGoesBesideTheServerAndLeavesWithIt(t *testing.T) {
	task := toolTask(t)
	path := filepath.Join(task.Workdir, geminiSettingsFile)
	own := `{"hooks":{"BeforeTool":[{"matcher":"write_file","hooks":[{"type":"command","command":"lint"}]}]},"hooksConfig":{"enabled":false}}`
	writeTestFile(t, path, own)
	_, restore, err := geminiTools(task, []string{"/opt/a2a mesh/a2a-adapter", "approve-hook"})
	if err != nil {
		t.Fatal(err)
	}
	settings, server := geminiServer(t, task)
	if server == nil {
		t.Fatal("no tool server beside the hook")
	}
	before := settings["hooks"].(map[string]any)["BeforeTool"].([]any)
	if len(before) != 2 {
		t.Fatalf("BeforeTool = %v, want the folder's hook and the mesh's", before)
	}
	def := before[1].(map[string]any)
	hook := def["hooks"].([]any)[0].(map[string]any)
	env, _ := hook["env"].(map[string]any)
	if def["matcher"] != "^(?!mcp_a2a_mesh_)" || hook["type"] != "command" || hook["name"] != geminiHookName ||
		hook["command"] != `'/opt/a2a mesh/a2a-adapter' 'approve-hook'` || hook["timeout"].(float64) <= float64(24*time.Hour/time.Millisecond) ||
		env[ToolsURLEnv] != "http://127.0.0.1:4321/mcp" || env[capabilityEnv] != "${A2A_MESH_TOOLS_CAPABILITY}" {
		t.Fatalf("the mesh's hook = %v", def)
	}
	if settings["hooksConfig"].(map[string]any)["enabled"] != true {
		t.Fatalf("hooksConfig = %v, want hooks on during the run", settings["hooksConfig"])
	}
	restore()
	if b, _ := os.ReadFile(path); string(b) != own {
		t.Fatalf("settings after the run = %s, want them as they were", b)
	}

	// Settings the host changed during the run lose only the mesh's parts.
	_, restore, err = geminiTools(task, []string{"a2a-adapter", "approve-hook"})
	if err != nil {
		t.Fatal(err)
	}
	settings, _ = geminiServer(t, task)
	settings["ui"] = map[string]any{"theme": "Dracula"}
	b, _ := json.Marshal(settings)
	writeTestFile(t, path, string(b))
	restore()
	b, _ = os.ReadFile(path)
	if strings.Contains(string(b), geminiHookName) || strings.Contains(string(b), mcpServerName) || !strings.Contains(string(b), "lint") || !strings.Contains(string(b), "Dracula") {
		t.Fatalf("settings after the run = %s, want the host's change and the folder's hook without the mesh's", b)
	}
}

// TestGeminiApproval_ModeMeshRunsGeminiUnaskedOnlyWithTheHook: the mesh's
// approval mode is yolo for Gemini CLI when the hook asks the mesh, and
// Gemini CLI's default when the run has no tool server to ask; it needs
// the hook's command.
func TestGeminiApproval_ModeMeshRunsGeminiUnaskedOnlyWithTheHook(t *testing.T) {
	g := &Gemini{cfg: GeminiConfig{ApprovalMode: ApprovalModeMesh, ApproveHook: []string{"a2a-adapter", "approve-hook"}}}
	if args := g.args("", true); !slices.Equal(args[len(args)-2:], []string{"--approval-mode", "yolo"}) {
		t.Fatalf("with the mesh's tools: %v", args)
	}
	if args := g.args("", false); !slices.Equal(args[len(args)-2:], []string{"--approval-mode", "default"}) {
		t.Fatalf("without: %v", args)
	}
	if _, err := NewGemini(GeminiConfig{ApprovalMode: ApprovalModeMesh}); err == nil || !strings.Contains(err.Error(), "hook") {
		t.Fatalf("mesh mode without the hook's command: %v", err)
	}
}

// TestGeminiApproval_TheHookDeniesWhatItCannotAsk: bad input, or no tool
// server to ask, or one that does not answer, is a deny with the reason,
// never a silent allow, and the capability is in no reason.
func TestGeminiApproval_TheHookDeniesWhatItCannotAsk(t *testing.T) {
	hookInput := `{"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls"}}`
	for name, c := range map[string]struct {
		cfg   HookConfig
		input string
		says  string
	}{
		"not JSON":       {HookConfig{MCPURL: "http://127.0.0.1:1/mcp", Capability: "a2acap_secret"}, "ls", "could not read"},
		"no tool name":   {HookConfig{MCPURL: "http://127.0.0.1:1/mcp", Capability: "a2acap_secret"}, `{"tool_input":{}}`, "no tool_name"},
		"no tool server": {HookConfig{}, hookInput, ToolsURLEnv},
		"nobody answers": {HookConfig{MCPURL: "http://127.0.0.1:1/mcp", Capability: "a2acap_secret"}, hookInput, "could not be asked"},
	} {
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := ApproveHook(ctx, c.cfg, strings.NewReader(c.input), &out)
		cancel()
		var got geminiHookOutput
		if err != nil || json.Unmarshal(out.Bytes(), &got) != nil || got.Decision != "deny" || !strings.Contains(got.Reason, c.says) ||
			strings.Contains(out.String(), "a2acap_secret") {
			t.Errorf("%s: %s (err %v), want a deny saying %q", name, out.String(), err, c.says)
		}
	}
}

// TestApproveHook_CodexHearsItsOwnShape: a PreToolUse hook (Codex) that
// cannot ask is denied in Codex's shape, with the reason; the mesh's own
// tools go on unasked, in either host's shape.
func TestApproveHook_CodexHearsItsOwnShape(t *testing.T) {
	answer := func(input string) string {
		var out bytes.Buffer
		if err := ApproveHook(t.Context(), HookConfig{}, strings.NewReader(input), &out); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out.String())
	}
	got := answer(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"call_1"}`)
	var codex preToolUseOutput
	if json.Unmarshal([]byte(got), &codex) != nil || codex.HookSpecificOutput == nil || codex.HookSpecificOutput.HookEventName != "PreToolUse" ||
		codex.HookSpecificOutput.PermissionDecision != "deny" || !strings.Contains(codex.HookSpecificOutput.PermissionDecisionReason, ToolsURLEnv) {
		t.Fatalf("PreToolUse without a tool server: %s", got)
	}
	if got := answer(`{"hook_event_name":"PreToolUse","tool_name":"mcp__a2a_mesh__send_task","tool_input":{}}`); got != `{}` {
		t.Fatalf("the mesh's own tool under PreToolUse: %s, want no decision", got)
	}
	if got := answer(`{"hook_event_name":"BeforeTool","tool_name":"mcp__a2a_mesh__send_task","tool_input":{}}`); got != `{"decision":"allow"}` {
		t.Fatalf("the mesh's own tool under BeforeTool: %s", got)
	}
}

// TestCodexApproval_TheHookIsGivenForTheRunOnly: under the mesh's
// approval mode a run with the mesh's tools runs Codex with the approval
// hook as its PreToolUse hook, trusted for this invocation, and the tool
// server's address in its environment; a run without tools, or another
// mode, has none.
func TestCodexApproval_TheHookIsGivenForTheRunOnly(t *testing.T) {
	c := &Codex{cfg: CodexConfig{Sandbox: DefaultCodexSandbox, ApprovalMode: ApprovalModeMesh, ApproveHook: []string{"/opt/a2a-adapter", "approve-hook"}}}
	task := toolTask(t)
	args := strings.Join(c.args(task, ""), " ")
	if !strings.Contains(args, "--dangerously-bypass-hook-trust") ||
		!strings.Contains(args, `hooks.PreToolUse=[{hooks=[{type="command",command="'/opt/a2a-adapter' 'approve-hook'",timeout=`) ||
		strings.Contains(args, "a2acap_secret") {
		t.Fatalf("args %s", args)
	}
	task.Request.Tools = nil
	if args := strings.Join(c.args(task, ""), " "); strings.Contains(args, "hooks.") || strings.Contains(args, "bypass-hook") {
		t.Fatalf("without tools: %s", args)
	}
	if _, err := NewCodex(CodexConfig{ApprovalMode: "yolo"}); err == nil {
		t.Fatal("an unknown approval mode was taken")
	}
}
