package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Seed 002's execute-agent example, sent as the seed writes it (the
// placeholders filled in: the agent, the input, a working directory and the
// value of its one variable, VARIABLE_NAME), to a2a-platform up as its own
// process, completes on a2a-runtime start running a2a-adapter, whose host
// sees VARIABLE_NAME with the caller's value. The value's bytes are in no
// file of the platform's data directory (its NATS store with it) before
// the runtime claims the run, while the host works and after the run
// ended; nor in any process's output, the runtime's ledger and files, the
// adapter's folders, the events, or the API's answers.
func TestSeed002_ExecuteAgentVariablesReachTheHostAndNoFileLogEventOrLedgerHoldsThem(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.CreateAgent("Claude Code Agent")
	m := l.newMachine()
	addr := meshtest.FreeAddr(t)
	prof := m.pair(p.Platform, agent.ID, "http://"+addr+"/run-task")
	var key meshapi.CreateA2AKeyResponse
	p.Do(http.MethodPost, "/a2a/"+agent.ID+"/api-keys", map[string]any{"name": "seed 002"}, &key)
	l.secrets.Add(key.APIKey)

	value := "seed002-value-" + mesh.NewID()
	dir := "/srv/seed002-" + mesh.NewID()
	sum := sha256.Sum256([]byte(value))
	gate := filepath.Join(t.TempDir(), "gate")
	workdir := filepath.Join(t.TempDir(), "work")
	// The host holds a first task ("hold") until the test lets it go, so
	// that the runtime (one run at a time) leaves the seed's run pending.
	// For the seed's run it says whether VARIABLE_NAME is set and the
	// digest of its value, never the value, waiting for the test first.
	host := script(t, "text=$(cat)\n"+
		"if [ \"$text\" = hold ]; then : > '"+gate+".hold'; "+untilFile(gate+".held")+"; echo held; exit 0; fi\n"+
		": > '"+gate+".started'\n"+untilFile(gate+".go")+"\n"+
		`if [ -n "${VARIABLE_NAME+x}" ]; then printf 'VARIABLE_NAME is set, sha256 %s\n' "$(printf %s "$VARIABLE_NAME" | sha256sum | cut -d' ' -f1)"; else echo 'VARIABLE_NAME is not set'; fi`+"\n")
	rt := m.startRuntime("--adapter", "command", "--adapter-bin", bins.Adapter,
		"--local-agent-endpoint", "http://"+addr+"/run-task",
		"--", "--workdir", workdir, "--log-level", "debug", "--", host)
	waitOnline(t, p.Platform, agent.ID, prof.RuntimeID)
	hold := p.CreateTask(agent.ID, "hold")
	waitFile(t, gate+".hold")

	type answer struct {
		status int
		body   []byte
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, p.APIBase+"/a2a", strings.NewReader(seed002ExecuteAgent(agent.ID, dir, value)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", key.APIKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{status: resp.StatusCode, body: b, err: err}
	}()

	var runs struct {
		TaskRuns []mesh.TaskRun `json:"task_runs"`
	}
	var listing *meshtest.Response
	var seed mesh.TaskRun
	meshtest.Eventually(t, waitStart, func() bool {
		listing = p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?agent_id=" + agent.ID, Owner: true}).Expect(t, http.StatusOK)
		listing.Decode(t, &runs)
		for _, r := range runs.TaskRuns {
			if r.ID != hold.ID {
				seed = r
			}
		}
		return seed.ID != ""
	}, func() string { return "execute-agent created no run: " + string(listing.Body) })
	runID := seed.ID
	if seed.Status != mesh.StatusPending {
		t.Fatalf("the run is %s while the runtime is busy with another", seed.Status)
	}
	scanDataDir := func(when string) {
		t.Helper()
		meshtest.NoFileHolds(t, p.dataDir, value, dir, when)
	}
	scanDataDir("before the run is claimed")

	touch(t, gate+".held")
	waitFile(t, gate+".started")
	scanDataDir("while the host works")

	touch(t, gate+".go")
	var a answer
	select {
	case a = <-answered:
	case <-time.After(2 * waitStart):
		t.Fatal("execute-agent never answered")
	}
	if a.err != nil || a.status != http.StatusOK {
		t.Fatalf("execute-agent answered %d %v: %s", a.status, a.err, l.secrets.Mask(string(a.body)))
	}
	var res struct {
		Payload struct {
			Result struct {
				Output      string `json:"output"`
				ExecutionID string `json:"executionId"`
			} `json:"result"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(a.body, &res); err != nil {
		t.Fatal(err)
	}
	if want := "VARIABLE_NAME is set, sha256 " + hex.EncodeToString(sum[:]); strings.TrimSpace(res.Payload.Result.Output) != want || res.Payload.Result.ExecutionID != runID {
		t.Fatalf("output %q of execution %s, want %q of %s", res.Payload.Result.Output, res.Payload.Result.ExecutionID, want, runID)
	}
	waitEnded(t, p.Platform, runID, mesh.StatusCompleted, waitStart)
	m.waitLedger(agent.ID, waitStart, func(e ledgerEntry) bool { return e.TaskRunID == runID && e.Event == string(ledger.EventTaskCompleted) })
	scanDataDir("after the run")

	texts := l.outputs()
	texts["execute-agent answer"] = string(a.body)
	texts["run"] = string(rawTask(t, p.Platform, runID))
	texts["listing"] = string(listing.Body)
	texts["executions"] = string(p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/api/executions", Owner: true}).Expect(t, http.StatusOK).Body)
	texts["ledger"] = meshtest.ReadFile(m.ledgerPath(agent.ID))
	var evText strings.Builder
	for _, ev := range events(t, p.Platform, url.Values{}) {
		evText.WriteString(ev.Raw + "\n")
	}
	texts["events"] = evText.String()
	if !strings.Contains(texts["events"], runID) || !strings.Contains(texts["ledger"], runID) || !strings.Contains(texts["output of "+rt.name], runID) {
		t.Fatalf("the events, the ledger or the runtime's output miss the run: the scan reads nothing useful")
	}
	// Every file the runtime, the adapter and the host left behind.
	for _, root := range []string{m.Home, workdir} {
		for path, content := range meshtest.Files(t, root) {
			texts["file "+path] = content
		}
	}
	meshtest.AssertNoSecrets(t, []string{value}, texts)
}

// seed002ExecuteAgent is seed 002's execute-agent request as the seed
// writes it, for agentID, with a working directory and VARIABLE_NAME.
func seed002ExecuteAgent(agentID, dir, value string) string {
	return `{
  "a2a": {
    "protocol": "a2a",
    "version": "1.0",
    "id": "request-unique-id",
    "timestamp": "2025-11-18T10:00:00.000Z",
    "type": "request"
  },
  "context": {
    "from": "source-agent-id",
    "to": "` + agentID + `",
    "conversationId": "conversation-id"
  },
  "payload": {
    "method": "execute-agent",
    "params": {
      "agentId": "` + agentID + `",
      "input": "string",
      "workingDirectory": "` + dir + `",
      "environmentVariables": {
        "VARIABLE_NAME": "` + value + `"
      }
    }
  }
}`
}
