package provider

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func newTestHermes(t *testing.T, record string, cfg HermesConfig, env ...string) *Hermes {
	t.Helper()
	cfg.Binary = fakeHost(t, "hermes")
	cfg.Env = fakeEnv(record, env...)
	h, err := NewHermes(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHermes_OneShotReturnsStdoutAndTheUsageReport(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	h := newTestHermes(t, record, HermesConfig{Model: "anthropic/claude-sonnet-4.5"})
	task := hostTask(t, root, "conv", "Fix the tests.")

	res, err, _ := runHost(t, h, task)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Output["text"]; got != "All tests pass now." {
		t.Fatalf("output.text = %q", got)
	}
	meta := metadata(t, res)
	if meta["estimated_cost_usd"] != 0.0123 || meta["provider"] != "openrouter" || !strings.HasPrefix(meta["session_id"].(string), "20251120_100000_") {
		t.Errorf("metadata = %v", meta)
	}
	if u, _ := meta["usage"].(map[string]any); u["total_tokens"] != int64(1200) {
		t.Errorf("metadata.usage = %v", meta["usage"])
	}
	call := onlyCall(t, record)
	if call.arg("-m") != "anthropic/claude-sonnet-4.5" || filepath.Dir(call.arg("--usage-file")) != task.RunDir {
		t.Errorf("argv %q", call.argv)
	}
	prompt := call.arg("-z")
	if !strings.HasPrefix(prompt, "You are the release agent.") || !strings.HasSuffix(prompt, "Fix the tests.") || !strings.Contains(prompt, task.OutputDir) {
		t.Errorf("-z prompt:\n%s", prompt)
	}
	if call.cwd != task.Workdir {
		t.Errorf("cwd %q, want %q", call.cwd, task.Workdir)
	}
}

func TestHermes_OneShotFailuresAreJudgedByTheUsageReport(t *testing.T) {
	tests := []struct {
		mode string
		says []string
	}{
		// Exit 0, but the report says failed: the "answer" is the error.
		{"upstream", []string{"hermes: failed", "API call failed after 3 retries: Connection error."}},
		{"partial", []string{"hermes exited with status 2", "stopped before completing the task (max_iterations)", "ran out of iterations"}},
		{"no_usage", []string{"no usage report", "An answer without a report."}},
		{"exit", []string{"hermes exited with status 2", "--provider requires --model"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			root, record := t.TempDir(), t.TempDir()
			h := newTestHermes(t, record, HermesConfig{}, "FAKE_MODE="+tt.mode)
			res, err, _ := runHost(t, h, hostTask(t, root, "conv", "hi"))
			if res != nil {
				t.Fatalf("result %+v for a failed run", res.Output)
			}
			wantError(t, err, tt.says...)
		})
	}
}

func TestHermes_OneShotResumesTheReportedSession(t *testing.T) {
	root, record := t.TempDir(), t.TempDir()
	store, err := OpenSessionStore(t.TempDir(), "hermes")
	if err != nil {
		t.Fatal(err)
	}
	h := newTestHermes(t, record, HermesConfig{HostConfig: HostConfig{Sessions: store}})
	first, err, _ := runHost(t, h, hostTask(t, root, "conv", "one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err, _ := runHost(t, h, hostTask(t, root, "conv", "two")); err != nil {
		t.Fatal(err)
	}
	calls := hostCalls(t, record)
	if calls[0].has("--resume") {
		t.Error("the first task resumed a session")
	}
	if got, want := calls[1].arg("--resume"), metadata(t, first)["session_id"]; got != want {
		t.Fatalf("--resume %q, want %q", got, want)
	}
}

// fakeHermesAPI is a Hermes API server: it checks the key and streams an
// answer with a hermes.tool.progress event in between.
func fakeHermesAPI(t *testing.T, key string, got *[]http.Header, bodies *[]map[string]any) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"message":"Invalid API key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
			return
		}
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		*got = append(*got, r.Header.Clone())
		*bodies = append(*bodies, body)
		w.Header().Set("Content-Type", "text/event-stream")
		if s := r.Header.Get("X-Hermes-Session-Id"); s != "" {
			w.Header().Set("X-Hermes-Session-Id", s)
		}
		io.WriteString(w, "data: {\"object\":\"chat.completion.chunk\",\"model\":\"hermes-agent\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Let me check the files. \"}}]}\n\n")
		io.WriteString(w, "event: hermes.tool.progress\ndata: {\"tool\":\"terminal\",\"emoji\":\"💻\",\"label\":\"ls -la\",\"status\":\"running\"}\n\n")
		io.WriteString(w, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"There are 3 files.\"}}]}\n\n")
		io.WriteString(w, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":20,\"total_tokens\":70}}\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHermes_APIServerStreamsTheAnswerAndToolProgress(t *testing.T) {
	var headers []http.Header
	var bodies []map[string]any
	srv := fakeHermesAPI(t, "hermes-key-0123456789", &headers, &bodies)
	store, err := OpenSessionStore(t.TempDir(), "hermes")
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHermes(HermesConfig{APIURL: srv.URL + "/", APIKey: "hermes-key-0123456789", HostConfig: HostConfig{Sessions: store}})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	res, err, log := runHost(t, h, hostTask(t, root, "conv", "list the files"))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Output["text"]; got != "Let me check the files. There are 3 files." {
		t.Fatalf("output.text = %q", got)
	}
	log.wantMessages(t, "Let me check the files.", "using terminal: ls -la")
	if _, err, _ := runHost(t, h, hostTask(t, root, "conv", "again")); err != nil {
		t.Fatal(err)
	}
	s1, s2 := headers[0].Get("X-Hermes-Session-Id"), headers[1].Get("X-Hermes-Session-Id")
	if s1 == "" || s1 != s2 {
		t.Fatalf("session headers %q and %q, want one session for the conversation", s1, s2)
	}
	msgs, _ := bodies[0]["messages"].([]any)
	system, _ := msgs[0].(map[string]any)
	if bodies[0]["stream"] != true || system["role"] != "system" || !strings.Contains(system["content"].(string), "You are the release agent.") {
		t.Fatalf("request body %v", bodies[0])
	}
}

func TestHermes_APIServerNeedsItsKey(t *testing.T) {
	_, err := NewHermes(HermesConfig{APIURL: "http://127.0.0.1:8642"})
	if !errors.Is(err, ErrMissingCredential) {
		t.Fatalf("err = %v, want ErrMissingCredential", err)
	}
	wantError(t, err, HermesAPIKeyEnv)

	var headers []http.Header
	var bodies []map[string]any
	srv := fakeHermesAPI(t, "the-right-key-123", &headers, &bodies)
	h, err := NewHermes(HermesConfig{APIURL: srv.URL, APIKey: "a-wrong-key-456"})
	if err != nil {
		t.Fatal(err)
	}
	_, err, _ = runHost(t, h, hostTask(t, t.TempDir(), "conv", "hi"))
	wantError(t, err, "the Hermes API server refused the credential (HTTP 401)", HermesAPIKeyEnv, "Invalid API key")
	if strings.Contains(err.Error(), "a-wrong-key-456") {
		t.Fatal("the key is in the failure")
	}
}
