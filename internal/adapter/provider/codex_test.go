package provider

import (
	"strings"
	"testing"
)

func newTestCodex(t *testing.T, record string, cfg CodexConfig, env ...string) *Codex {
	t.Helper()
	cfg.Binary = fakeHost(t, "codex")
	cfg.Env = fakeEnv(record, env...)
	c, err := NewCodex(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCodex_RunsExecJSONAndReturnsTheLastAgentMessage(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	c := newTestCodex(t, record, CodexConfig{Model: "gpt-5-codex"})
	task := hostTask(t, root, "conv-1", "Fix the tests.")

	res, err, log := runHost(t, c, task)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Output["text"]; got != "Fixed main.go; all tests pass." {
		t.Fatalf("output.text = %q", got)
	}
	meta := metadata(t, res)
	if u, _ := meta["usage"].(map[string]any); u["output_tokens"] != float64(122) {
		t.Errorf("metadata.usage = %v", meta["usage"])
	}
	if id, _ := meta["session_id"].(string); !strings.HasPrefix(id, "0199a213-") {
		t.Errorf("metadata.session_id = %v, want the thread id", meta["session_id"])
	}
	log.wantMessages(t,
		"Running the test suite to see what fails.",
		"running: go test ./...",
		"command failed (exit 1): go test ./...",
		"Reconnecting... 1/5",
		"editing main.go and 1 more file",
		"plan: 1 of 2 steps done",
		"Fixed main.go; all tests pass.",
	)

	call := onlyCall(t, record)
	if call.argv[0] != "exec" || !call.has("--json") || !call.has("--skip-git-repo-check") || !call.has("--ephemeral") || call.argv[len(call.argv)-1] != "-" {
		t.Errorf("argv %q", call.argv)
	}
	if call.arg("-C") != task.Workdir || call.arg("-s") != DefaultCodexSandbox || call.arg("-m") != "gpt-5-codex" {
		t.Errorf("-C %q -s %q -m %q", call.arg("-C"), call.arg("-s"), call.arg("-m"))
	}
	for _, part := range []string{"You are the release agent.", "Answer in English.", task.OutputDir, "Fix the tests."} {
		if !strings.Contains(call.stdin, part) {
			t.Errorf("stdin lacks %q:\n%s", part, call.stdin)
		}
	}
	if !strings.HasSuffix(call.stdin, "Fix the tests.") {
		t.Errorf("the task does not come last on stdin:\n%s", call.stdin)
	}
}

func TestCodex_Failures(t *testing.T) {
	tests := []struct {
		mode string
		says []string
	}{
		{"failed", []string{"codex exited with status 1", "stream disconnected before completion: rate limit reached"}},
		{"exit", []string{"codex exited with status 2", "unexpected argument"}},
		{"garbage", []string{"codex: finished without an answer", "not JSON events", "Reading prompt from stdin"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			root, record := t.TempDir(), t.TempDir()
			c := newTestCodex(t, record, CodexConfig{}, "FAKE_MODE="+tt.mode)
			_, err, _ := runHost(t, c, hostTask(t, root, "conv", "hi"))
			wantError(t, err, tt.says...)
		})
	}
}

func TestCodex_ResumesTheThreadOfTheConversation(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	store, err := OpenSessionStore(t.TempDir(), "codex")
	if err != nil {
		t.Fatal(err)
	}
	c := newTestCodex(t, record, CodexConfig{Sandbox: "read-only", HostConfig: HostConfig{Sessions: store}})
	first, err, _ := runHost(t, c, hostTask(t, root, "conv", "one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err, _ := runHost(t, c, hostTask(t, root, "conv", "two")); err != nil {
		t.Fatal(err)
	}
	calls := hostCalls(t, record)
	thread := metadata(t, first)["session_id"].(string)
	if calls[0].has("--ephemeral") || calls[0].has("resume") {
		t.Errorf("first run argv %q: want a new thread kept on disk", calls[0].argv)
	}
	if calls[1].arg("resume") != thread || calls[1].arg("-s") != "read-only" || calls[1].argv[len(calls[1].argv)-1] != "-" {
		t.Errorf("second run argv %q, want exec ... resume %s -", calls[1].argv, thread)
	}
}
