package provider

import (
	"strings"
	"testing"
)

func newTestGemini(t *testing.T, record string, cfg GeminiConfig, env ...string) *Gemini {
	t.Helper()
	cfg.Binary = fakeHost(t, "gemini")
	cfg.Env = fakeEnv(record, env...)
	g, err := NewGemini(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGemini_RunsHeadlessAndAssemblesTheStreamedAnswer(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	g := newTestGemini(t, record, GeminiConfig{ApprovalMode: "auto_edit", Model: "gemini-2.5-flash"})
	task := hostTask(t, root, "conv", "Fix the tests.")

	res, err, log := runHost(t, g, task)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Output["text"]; got != "I will run the tests. Then fix them.\n\nAll tests pass now." {
		t.Fatalf("output.text = %q, want the assistant messages together", got)
	}
	meta := metadata(t, res)
	if meta["model"] != "gemini-2.5-pro" || !strings.HasPrefix(meta["session_id"].(string), "c7c3f0d2-") {
		t.Errorf("metadata = %v", meta)
	}
	if u, _ := meta["usage"].(map[string]any); u["total_tokens"] != float64(120) {
		t.Errorf("metadata.usage = %v", meta["usage"])
	}
	log.wantMessages(t,
		"I will run the tests.",
		"running: go test ./...",
		"editing main.go",
		"tool failed: could not find the string to replace",
		"warning: Retrying after a 429",
		"All tests pass now.",
	)
	call := onlyCall(t, record)
	if call.arg("-o") != "stream-json" || call.arg("--approval-mode") != "auto_edit" || call.arg("-m") != "gemini-2.5-flash" || call.has("-p") || call.has("-r") {
		t.Errorf("argv %q", call.argv)
	}
	if !strings.HasPrefix(call.stdin, "You are the release agent.") || !strings.HasSuffix(call.stdin, "Fix the tests.") || !strings.Contains(call.stdin, task.OutputDir) {
		t.Errorf("stdin:\n%s", call.stdin)
	}
}

func TestGemini_FailuresUseTheDocumentedExitCodes(t *testing.T) {
	tests := []struct {
		mode string
		says []string
	}{
		{"error", []string{"gemini exited with status 53", "Reached max session turns"}},
		{"auth", []string{"gemini exited with status 41", "could not authenticate", "GEMINI_API_KEY", "Please set an Auth method"}},
		{"garbage", []string{"gemini: ended without a result", "Loaded cached credentials"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			root, record := t.TempDir(), t.TempDir()
			g := newTestGemini(t, record, GeminiConfig{}, "FAKE_MODE="+tt.mode)
			_, err, _ := runHost(t, g, hostTask(t, root, "conv", "hi"))
			wantError(t, err, tt.says...)
		})
	}
}

func TestGemini_ResumesWithR(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	store, err := OpenSessionStore(t.TempDir(), "gemini")
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGemini(t, record, GeminiConfig{HostConfig: HostConfig{Sessions: store}})
	first, err, _ := runHost(t, g, hostTask(t, root, "conv", "one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err, _ := runHost(t, g, hostTask(t, root, "conv", "two")); err != nil {
		t.Fatal(err)
	}
	calls := hostCalls(t, record)
	if got, want := calls[1].arg("-r"), metadata(t, first)["session_id"]; got != want {
		t.Fatalf("-r %q, want %q", got, want)
	}
}
