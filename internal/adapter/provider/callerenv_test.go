package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

// TestCommand_CallerEnvironmentReachesTheHostOnly: the variables a task's
// caller asked for are in the host's environment (without the reserved
// names, which cannot override the adapter's PATH and HOME or the task's
// A2A_ variables), the working directory is A2A_WORKING_DIRECTORY while the
// host still runs in its conversation's directory, and neither the task
// file nor A2A_TASK_JSON repeats them.
func TestCommand_CallerEnvironmentReachesTheHostOnly(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "env.sh", `
printf 'token=%s\n' "$API_TOKEN"
printf 'run=%s\n' "$A2A_TASK_RUN_ID"
printf 'home=%s\n' "$HOME"
printf 'cwdvar=%s\n' "$A2A_WORKING_DIRECTORY"
printf 'pwd=%s\n' "$(pwd -P)"
printf 'json=%s\n' "$A2A_TASK_JSON"
printf 'file=%s\n' "$(cat "$A2A_TASK_FILE")"
`)
	c := newTestCommand(t, CommandConfig{Argv: []string{script}, Env: testEnv("HOME=/home/adapter")})
	env := &adapterapi.Environment{WorkingDirectory: "/srv/project", Variables: map[string]string{
		"API_TOKEN": "secret-value-19", "HOME": "/tmp/evil", "A2A_TASK_RUN_ID": "forged", "a2a_lower": "x",
	}}
	req := adapterapi.RunTaskRequest{TaskRunID: "run-9", ConversationID: "conv-9", Input: []byte(`{"text":"x"}`), Environment: env}
	raw := `{"task_run_id":"run-9","conversation_id":"conv-9","input":{"text":"x"},"environment":{"working_directory":"/srv/project","variables":{"API_TOKEN":"secret-value-19"}}}`
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := runCommand(t, c, NewTask(req, []byte(raw), root, ""))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(res.Output["text"].(string), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	want := map[string]string{"token": "secret-value-19", "run": "run-9", "home": "/home/adapter", "cwdvar": "/srv/project", "pwd": filepath.Join(root, "conv-9")}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"json", "file"} {
		if strings.Contains(got[k], "secret-value-19") || strings.Contains(got[k], "environment") || !strings.Contains(got[k], "run-9") {
			t.Errorf("%s carries the environment: %q", k, got[k])
		}
	}
	if _, err := os.Stat(filepath.Join(root, "conv-9", ".a2a-runs")); !os.IsNotExist(err) {
		t.Errorf("the run directory (with the task file) is left behind: %v", err)
	}
}
