package provider

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

func newTestClaude(t *testing.T, record string, cfg ClaudeConfig, env ...string) *Claude {
	t.Helper()
	cfg.Binary = fakeHost(t, "claude")
	cfg.Env = fakeEnv(record, env...)
	c, err := NewClaude(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClaude_RunsPrintModeAndReturnsTheResult(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	c := newTestClaude(t, record, ClaudeConfig{PermissionMode: "acceptEdits", AllowedTools: "Read,Edit,Bash(go test:*)", MaxTurns: 7, MaxBudgetUSD: 1.5, Model: "sonnet"},
		"ANTHROPIC_API_KEY=sk-ant-test-0123456789")
	task := hostTask(t, root, "conv-1", "Fix the failing tests.")

	res, err, log := runHost(t, c, task)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Output["text"]; got != "All tests pass now.\n\nI fixed main.go." {
		t.Fatalf("output.text = %q, want the result message's result", got)
	}
	meta := metadata(t, res)
	if meta["total_cost_usd"] != 0.0312 || meta["num_turns"] != 4 || meta["host"] != "claude" || meta["model"] != "claude-sonnet-4-5-20250929" {
		t.Errorf("metadata = %v", meta)
	}
	if u, _ := meta["usage"].(map[string]any); u["output_tokens"] != float64(80) {
		t.Errorf("metadata.usage = %v", meta["usage"])
	}
	if !strings.HasPrefix(meta["session_id"].(string), "sess-") {
		t.Errorf("metadata.session_id = %v", meta["session_id"])
	}
	log.wantMessages(t,
		"I will run the tests first.",
		"running: go test ./...",
		"API retry 1/10 (overloaded HTTP 529), next in 0.6s",
		"editing main.go",
	)

	call := onlyCall(t, record)
	for _, flag := range []string{"-p", "--verbose", "--no-session-persistence"} {
		if !call.has(flag) {
			t.Errorf("argv %q lacks %s", call.argv, flag)
		}
	}
	for flag, want := range map[string]string{"--output-format": "stream-json", "--permission-mode": "acceptEdits", "--allowedTools": "Read,Edit,Bash(go test:*)", "--max-turns": "7", "--max-budget-usd": "1.5", "--model": "sonnet"} {
		if got := call.arg(flag); got != want {
			t.Errorf("%s = %q, want %q", flag, got, want)
		}
	}
	system := call.arg("--append-system-prompt")
	for _, part := range []string{"You are the release agent.", "Answer in English.", "Files you want to deliver go in " + task.OutputDir} {
		if !strings.Contains(system, part) {
			t.Errorf("--append-system-prompt %q lacks %q", system, part)
		}
	}
	if call.stdin != "Fix the failing tests." {
		t.Errorf("stdin = %q, want the task text alone", call.stdin)
	}
	if call.cwd != task.Workdir {
		t.Errorf("working directory %q, want the conversation's %q", call.cwd, task.Workdir)
	}
	if call.env["ANTHROPIC_API_KEY"] != "sk-ant-test-0123456789" || call.env["A2A_CONVERSATION_ID"] != "conv-1" {
		t.Errorf("the host's environment lacks the key or the task: %v", call.env)
	}
	if strings.Contains(strings.Join(call.argv, " "), "sk-ant-test") {
		t.Error("the API key is on the command line")
	}
}

func TestClaude_FailuresCarryTheHostsReason(t *testing.T) {
	tests := []struct {
		mode string
		says []string
	}{
		{"error", []string{"claude exited with status 1", "API Error: 401", "invalid x-api-key"}},
		{"max_turns", []string{"turn limit after 3 turns", "--max-turns"}},
		{"exit", []string{"claude exited with status 1", "Invalid API key"}},
		{"garbage", []string{"claude: ended without a result", "2 lines of output were not JSON events", "Welcome to Claude Code"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			root, record := t.TempDir(), t.TempDir()
			c := newTestClaude(t, record, ClaudeConfig{}, "FAKE_MODE="+tt.mode)
			res, err, _ := runHost(t, c, hostTask(t, root, "conv", "hi"))
			if res != nil {
				t.Fatalf("result %+v for a failed run", res.Output)
			}
			wantError(t, err, tt.says...)
		})
	}
}

func TestClaude_OutputFilesBecomeArtifacts(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	c := newTestClaude(t, record, ClaudeConfig{}, "FAKE_OUTPUT=# Report")
	task := hostTask(t, root, "conv", "write the report")
	res, err, _ := runHost(t, c, task)
	if err != nil {
		t.Fatal(err)
	}
	writes, err := adapterapi.ArtifactWrites(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 1 || writes[0].Filename != "report.md" || writes[0].MimeType != "text/markdown" || writes[0].ContentText != "# Report\n" {
		t.Fatalf("artifacts = %+v, want report.md", writes)
	}
}

func TestClaude_SessionPersistenceResumesWithinAConversationOnly(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	store, err := OpenSessionStore(t.TempDir(), "claude")
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClaude(t, record, ClaudeConfig{HostConfig: HostConfig{Sessions: store}})

	first, err, _ := runHost(t, c, hostTask(t, root, "conv-a", "one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err, _ := runHost(t, c, hostTask(t, root, "conv-a", "two")); err != nil {
		t.Fatal(err)
	}
	if _, err, _ := runHost(t, c, hostTask(t, root, "conv-b", "three")); err != nil {
		t.Fatal(err)
	}
	calls := hostCalls(t, record)
	if len(calls) != 3 {
		t.Fatalf("%d starts, want 3", len(calls))
	}
	session := metadata(t, first)["session_id"].(string)
	if calls[0].has("--resume") || calls[0].has("--no-session-persistence") {
		t.Errorf("first task of a conversation: argv %q, want a new, persisted session", calls[0].argv)
	}
	if got := calls[1].arg("--resume"); got != session {
		t.Errorf("second task of conv-a resumes %q, want %q", got, session)
	}
	if calls[2].has("--resume") {
		t.Errorf("conv-b resumes %q, a session of another conversation", calls[2].arg("--resume"))
	}
	if calls[0].cwd != calls[1].cwd || calls[0].cwd == calls[2].cwd {
		t.Errorf("working directories %q %q %q: want one per conversation", calls[0].cwd, calls[1].cwd, calls[2].cwd)
	}
	if got, _ := store.Get("conv-a"); got != session {
		t.Errorf("store has %q for conv-a, want %q", got, session)
	}
}

func TestClaude_FailedResumeForgetsTheSession(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	store, err := OpenSessionStore(t.TempDir(), "claude")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put("conv", "gone-session"); err != nil {
		t.Fatal(err)
	}
	c := newTestClaude(t, record, ClaudeConfig{HostConfig: HostConfig{Sessions: store}}, "FAKE_MODE=exit")
	if _, err, _ := runHost(t, c, hostTask(t, root, "conv", "hi")); err == nil {
		t.Fatal("the run succeeded")
	}
	if got := onlyCall(t, record).arg("--resume"); got != "gone-session" {
		t.Fatalf("--resume %q, want the stored session", got)
	}
	if got, _ := store.Get("conv"); got != "" {
		t.Fatalf("the failed session %q is still stored; the conversation would fail forever", got)
	}
}

func TestClaude_LongInstructionsTravelWithThePrompt(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	c := newTestClaude(t, record, ClaudeConfig{})
	task := hostTask(t, root, "conv", "the task")
	task.Instructions = strings.Repeat("Be careful. ", maxArgBytes/10)
	if _, err, _ := runHost(t, c, task); err != nil {
		t.Fatal(err)
	}
	call := onlyCall(t, record)
	if call.has("--append-system-prompt") {
		t.Error("instructions over the argument limit passed as an argument")
	}
	if !strings.HasPrefix(call.stdin, "Be careful.") || !strings.HasSuffix(call.stdin, "the task") {
		t.Errorf("stdin does not carry the instructions, then the task: %q…", call.stdin[:40])
	}
}

func TestClaude_MissingBinaryIsReportedAtStart(t *testing.T) {
	_, err := NewClaude(ClaudeConfig{HostConfig: HostConfig{Binary: filepath.Join(t.TempDir(), "claude")}})
	if !errors.Is(err, ErrHostNotFound) {
		t.Fatalf("err = %v, want ErrHostNotFound", err)
	}
	wantError(t, err, "Claude Code", "npm install -g @anthropic-ai/claude-code", "--host-binary")
}
