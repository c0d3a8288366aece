package hosts_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// The shipped a2a-runtime, started as a process, hands the adapter what
// the platform holds now: a file sent with an A2A message arrives with its
// bytes, and instructions edited after the runtime started reach the next
// task.
func TestRuntimeBinary_PassesAttachmentBytesAndCurrentInstructions(t *testing.T) {
	p := meshtest.StartPlatform(t)
	runtimeBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-runtime")
	adapterBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-adapter")
	home, dir := t.TempDir(), t.TempDir()
	addr := meshtest.FreeAddr(t)
	// The agent host is a script that answers with what it was given.
	host := `printf 'instructions=%s\n' "$A2A_INSTRUCTIONS"; [ -n "$A2A_ATTACHMENTS_DIR" ] && for f in "$A2A_ATTACHMENTS_DIR"/*; do [ -f "$f" ] && printf 'file %s=' "${f##*/}" && cat "$f"; done; true`
	adapter := startProcess(t, "a2a-adapter", []string{"HOME=" + home}, adapterBin, "--provider", "command", "--listen", addr,
		"--workdir", filepath.Join(dir, "work"), "--", "sh", "-c", host)
	adapter.waitOutput(t, "a2a-adapter listening on http://"+addr)

	var agent mesh.Agent
	p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": "runtime e2e", "instructions": "First instructions."}, &agent)
	pair := exec.Command(runtimeBin, "pair", p.PairingCode(agent.ID), "--api-base", p.APIBase,
		"--local-agent-endpoint", "http://"+addr+"/run-task", "--local-executor-type", "custom")
	pair.Env = append(os.Environ(), "HOME="+home)
	if out, err := pair.CombinedOutput(); err != nil {
		t.Fatalf("a2a-runtime pair: %v\n%s", err, out)
	}
	rt := startProcess(t, "a2a-runtime", []string{"HOME=" + home}, runtimeBin, "start", "--log-level", "debug")
	rt.waitOutput(t, `"message":"runtime started"`)

	// A file sent with an A2A message is stored by the platform; the
	// runtime fetches its bytes for the adapter.
	var key struct {
		APIKey string `json:"api_key"`
	}
	p.Do(http.MethodPost, "/a2a/"+agent.ID+"/api-keys", map[string]any{"name": "e2e"}, &key)
	csv := "col1,col2\n1,2\n"
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{
		"message": map[string]any{"messageId": mesh.NewID(), "role": "user", "kind": "message", "parts": []any{
			map[string]any{"kind": "text", "text": "Read the table."},
			map[string]any{"kind": "file", "file": map[string]any{"name": "t.csv", "mimeType": "text/csv", "bytes": base64.StdEncoding.EncodeToString([]byte(csv))}},
		}}}})
	res := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/" + agent.ID, Body: body, ContentType: "application/json",
		Header: http.Header{"X-Api-Key": {key.APIKey}}}).Expect(t, http.StatusOK)
	if !strings.Contains(string(res.Body), `file t.csv=col1,col2\n1,2`) {
		t.Errorf("the host did not get the file's bytes; the answer: %s", res.Body)
	}
	if !strings.Contains(string(res.Body), "instructions=First instructions.") {
		t.Errorf("the host did not get the instructions; the answer: %s", res.Body)
	}

	// Instructions edited while the runtime runs reach the next task.
	p.Do(http.MethodPatch, "/agent-accounts/"+agent.ID, map[string]any{"instructions": "Edited instructions."}, nil)
	run := waitEnd(t, p, p.CreateTask(agent.ID, "Again.").ID, mesh.StatusCompleted)
	if out := outputOf(t, run); !strings.Contains(out.Text, "instructions=Edited instructions.") {
		t.Errorf("the next task after the edit carried %q, want the edited instructions", out.Text)
	}
}
