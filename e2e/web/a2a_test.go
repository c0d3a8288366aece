package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// curlExampleText is the message text of the agent page's curl example,
// which a reader replaces with their own.
const curlExampleText = "Hello! What can you do?"

// TestWeb_CurlExampleRunsAgainWithAnotherText: the agent page's curl
// command, pasted into a shell twice with another text the second time,
// sends two messages: two tasks, each answered with its own text.
func TestWeb_CurlExampleRunsAgainWithAnotherText(t *testing.T) {
	p := meshtest.StartPlatform(t)
	agent := meshtest.StartOnlineAgent(t, p, meshtest.AgentOptions{Name: "Curl target"})
	var created struct {
		APIKey string `json:"api_key"`
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/" + agent.Agent.ID + "/api-keys", Owner: true,
		JSON: map[string]any{"name": "curl"}}).Expect(t, http.StatusCreated).Decode(t, &created)

	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/agents/" + agent.Agent.ID)
	b.waitText("#a2a-curl", "curl -sS")
	command := b.textOf("#a2a-curl")

	tasks := map[string]string{}
	for _, text := range []string{"What is the weekly report?", "Which week was it?"} {
		status, out := runCurlExample(t, command, created.APIKey, text)
		var answer struct {
			Result struct {
				ID     string `json:"id"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(out), &answer); err != nil || status != http.StatusOK || answer.Error != nil ||
			answer.Result.Status.State != "completed" || !strings.Contains(out, text) {
			t.Fatalf("the page's curl command with %q answered %d:\n%s", text, status, out)
		}
		if earlier, ok := tasks[answer.Result.ID]; ok {
			t.Fatalf("%q and %q got the same task %s", earlier, text, answer.Result.ID)
		}
		tasks[answer.Result.ID] = text
	}
}

// runCurlExample runs the page's curl example in a shell as a reader would:
// the API key in A2A_API_KEY, the message text replaced by text. It returns
// the HTTP status and the body of the answer.
func runCurlExample(t *testing.T, command, apiKey, text string) (int, string) {
	t.Helper()
	if !strings.Contains(command, curlExampleText) {
		t.Fatalf("the curl example has no %q to replace:\n%s", curlExampleText, command)
	}
	var lines []string
	for _, line := range strings.Split(command, "\n") {
		if !strings.HasPrefix(line, "export A2A_API_KEY=") {
			lines = append(lines, line)
		}
	}
	// The status on a line of its own after the body.
	script := strings.Replace(strings.Join(lines, "\n"), curlExampleText, text, 1) + ` -w '\n%{http_code}'`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Env = append(os.Environ(), "A2A_API_KEY="+apiKey)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the page's curl command: %v\n%s", err, out)
	}
	at := strings.LastIndexByte(string(out), '\n')
	status, err := strconv.Atoi(string(out[at+1:]))
	if at < 0 || err != nil {
		t.Fatalf("the page's curl command printed no status after the body:\n%s", out)
	}
	return status, string(out[:at])
}
