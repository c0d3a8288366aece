package provider

import (
	"strings"
	"testing"
)

func newTestCursor(t *testing.T, record string, cfg CursorConfig, env ...string) *Cursor {
	t.Helper()
	cfg.Binary = fakeHost(t, "cursor-agent")
	cfg.Env = fakeEnv(record, env...)
	c, err := NewCursor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCursor_RunsPrintModeAndReturnsTheResult(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	c := newTestCursor(t, record, CursorConfig{Force: true, Model: "sonnet-4.5"})
	task := hostTask(t, root, "conv", "Fix the tests.")

	res, err, log := runHost(t, c, task)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Output["text"]; got != "I will read the README first. It says how to build.Done: the tests pass." {
		t.Fatalf("output.text = %q, want the result event's result", got)
	}
	meta := metadata(t, res)
	if meta["model"] != "Claude 4.5 Sonnet" || meta["duration_ms"] != 1234 || !strings.HasPrefix(meta["session_id"].(string), "a7b9e0c1-") {
		t.Errorf("metadata = %v", meta)
	}
	log.wantMessages(t,
		"I will read the README first.",
		"reading README.md",
		"running: go test ./...",
		"writing notes.md",
		"tool failed: write: permission denied",
		"Done: the tests pass.",
	)
	call := onlyCall(t, record)
	if !call.has("-p") || !call.has("--trust") || !call.has("--force") || call.arg("--output-format") != "stream-json" ||
		call.arg("--workspace") != task.Workdir || call.arg("--model") != "sonnet-4.5" || call.has("--resume") {
		t.Errorf("argv %q", call.argv)
	}
	prompt := call.argv[len(call.argv)-1]
	if !strings.HasPrefix(prompt, "You are the release agent.") || !strings.HasSuffix(prompt, "Fix the tests.") || !strings.Contains(prompt, task.OutputDir) {
		t.Errorf("prompt argument:\n%s", prompt)
	}
}

func TestCursor_Failures(t *testing.T) {
	tests := []struct {
		mode string
		says []string
	}{
		{"exit", []string{"cursor-agent exited with status 1", "Authentication required", "CURSOR_API_KEY"}},
		{"garbage", []string{"cursor-agent: ended without a result", "Workspace Trust Required"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			root, record := t.TempDir(), t.TempDir()
			c := newTestCursor(t, record, CursorConfig{}, "FAKE_MODE="+tt.mode)
			_, err, _ := runHost(t, c, hostTask(t, root, "conv", "hi"))
			wantError(t, err, tt.says...)
		})
	}
}

func TestCursor_ResumesTheChatOfTheConversation(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	store, err := OpenSessionStore(t.TempDir(), "cursor")
	if err != nil {
		t.Fatal(err)
	}
	c := newTestCursor(t, record, CursorConfig{HostConfig: HostConfig{Sessions: store}})
	first, err, _ := runHost(t, c, hostTask(t, root, "conv", "one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err, _ := runHost(t, c, hostTask(t, root, "conv", "two")); err != nil {
		t.Fatal(err)
	}
	if got, want := hostCalls(t, record)[1].arg("--resume"), metadata(t, first)["session_id"]; got != want {
		t.Fatalf("--resume %q, want %q", got, want)
	}
}
