package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestA2A_JavaScriptClientsOfBothVersions runs the official A2A JavaScript
// client, in a 0.3 and a 1.x version (installed from npm by `npm ci`), in
// Node against one agent URL of a real platform with a real runtime and
// adapter: each resolves the card, sends, streams, gets, (1.x) lists, sets
// push configurations and cancels a working task, over JSON-RPC and
// HTTP+JSON. The agent host is a script that echoes, or works until it is
// stopped when the text starts with "wait".
func TestA2A_JavaScriptClientsOfBothVersions(t *testing.T) {
	t.Parallel()
	dir := jsClients(t)
	l := newLab(t)
	p := l.startPlatform(platformOptions{allowPrivateWebhooks: true})
	host := script(t, `text=$(cat)
case "$text" in
wait*) while true; do sleep 0.1; done ;;
*) printf '%s' "$text" ;;
esac`)
	c := l.connect(p, l.startAdapter("command", host).Endpoint)
	var key struct {
		APIKey string `json:"api_key"`
	}
	p.Do(http.MethodPost, "/a2a/"+c.AgentID+"/api-keys", map[string]any{"name": "javascript"}, &key)
	var mu sync.Mutex
	pushes := map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		pushes[r.Header.Get("X-A2A-Notification-Token")+" "+r.Header.Get("Authorization")]++
		mu.Unlock()
	}))
	defer recv.Close()
	agentURL := p.APIBase + "/a2a/" + c.AgentID

	for _, script := range []string{"v03.mjs", "v1.mjs"} {
		for _, transport := range []string{"JSONRPC", "HTTP+JSON"} {
			name := script + " " + transport
			cmd := exec.Command("node", filepath.Join(dir, script), agentURL, recv.URL+"/"+strings.TrimSuffix(script, ".mjs"), transport)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "A2A_API_KEY="+key.APIKey)
			raw, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: node: %v\n%s", name, err, raw)
			}
			var out struct {
				Error string `json:"error"`
				Card  *struct {
					ProtocolVersion string `json:"protocolVersion"`
					URL             string `json:"url"`
				} `json:"card"`
				Client *struct {
					ProtocolVersion string `json:"protocolVersion"`
				} `json:"client"`
				Send struct {
					ID, State, Text string
				} `json:"send"`
				Stream []string `json:"stream"`
				Get    struct {
					State   string
					History int
					Text    string
				} `json:"get"`
				List *struct {
					Count int
					Next  bool
				} `json:"list"`
				Push struct {
					ID     string
					Listed int
					Task   string
				} `json:"push"`
				Cancel struct {
					State string
				} `json:"cancel"`
				UnknownTask string `json:"unknownTask"`
			}
			if err := json.Unmarshal(raw, &out); err != nil || out.Error != "" {
				t.Fatalf("%s: %v %s", name, err, raw)
			}
			t.Logf("%s: %s", name, strings.TrimSpace(string(raw)))
			completed, canceled := "completed", "canceled"
			if script == "v1.mjs" {
				completed, canceled = "TASK_STATE_COMPLETED", "TASK_STATE_CANCELED"
				if out.Client == nil || out.Client.ProtocolVersion != "1.0" {
					t.Errorf("%s: the 1.x client did not pick a 1.0 interface: %s", name, raw)
				}
				if out.List == nil || out.List.Count != 1 || !out.List.Next {
					t.Errorf("%s: list: %s", name, raw)
				}
			} else if out.Card == nil || out.Card.ProtocolVersion != "0.3" || out.Card.URL != agentURL {
				t.Errorf("%s: card: %s", name, raw)
			}
			if !mesh.ValidID(out.Send.ID) || out.Send.State != completed || !strings.HasPrefix(out.Send.Text, "hello from js") {
				t.Errorf("%s: send: %+v", name, out.Send)
			}
			if len(out.Stream) == 0 || !strings.HasSuffix(out.Stream[len(out.Stream)-1], completed) {
				t.Errorf("%s: stream: %v", name, out.Stream)
			}
			if out.Get.State != completed || out.Get.History != 1 || out.Get.Text != out.Send.Text {
				t.Errorf("%s: get: %+v", name, out.Get)
			}
			if out.Push.Listed != 1 || out.Push.ID == "" {
				t.Errorf("%s: push configs: %+v", name, out.Push)
			}
			if out.Cancel.State != canceled {
				t.Errorf("%s: cancel: %+v", name, out.Cancel)
			}
			if out.UnknownTask == "found" || out.UnknownTask == "" {
				t.Errorf("%s: an unknown task: %q", name, out.UnknownTask)
			}
			run := p.GetTask(out.Push.Task)
			if run.Status != mesh.StatusCanceled {
				t.Errorf("%s: the canceled task's run is %s", name, run.Status)
			}
		}
	}
	// Each push configuration was delivered the cancellation, with its own
	// authentication: 0.3 the token, 1.x the Authorization asked for.
	meshtest.Eventually(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return pushes["js-token-03 "] >= 2 && pushes["js-token-1 Bearer js-credentials-1"] >= 2
	}, func() string {
		mu.Lock()
		defer mu.Unlock()
		return "pushes received: " + meshtest.JSON(pushes)
	})
}

// jsClients returns a directory with the interop scripts and their
// node_modules: e2e/a2ajs itself when someone ran npm ci there, otherwise a
// temporary copy installed with npm ci from the committed lock file.
func jsClients(t *testing.T) string {
	t.Helper()
	return meshtest.NodePackage(t, "a2ajs", "a2a-v1", "client.mjs", "v03.mjs", "v1.mjs")
}
