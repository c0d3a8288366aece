// Package docs runs the shell examples of the README and the docs as they
// are written, against real platform, runtime and adapter processes, so
// they cannot drift from what the programs do.
package docs

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

var bins meshtest.Programs

func TestMain(m *testing.M) { meshtest.RunWithPrograms(m, &bins) }

// runByTests are the documents whose examples a test of this file runs;
// every other document's examples must all be marked as not run.
var runByTests = []string{"README.md", "docs/a2a.md", "docs/adapter.md", "docs/events.md", "docs/runtime.md"}

// TestDocs_EveryExampleIsRunOrMarked: the documents no test here runs
// examples of hold only marked examples, and the programs know the verbs
// and flags those use. A new document is covered by the glob.
func TestDocs_EveryExampleIsRunOrMarked(t *testing.T) {
	t.Parallel()
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no documents in docs/: %v", err)
	}
	for _, d := range docs {
		file := "docs/" + filepath.Base(d)
		if slices.Contains(runByTests, file) {
			continue
		}
		accountFor(t, examples(t, file), nil)
	}
}

// waitTask waits until the run ends and returns it.
func waitTask(t *testing.T, s *session, id string) mesh.TaskRun {
	t.Helper()
	return s.p.WaitTask(id, time.Minute, func(r mesh.TaskRun) bool { return r.Status.Terminal() })
}

// wantCompleted fails unless run completed with an output holding text.
func wantCompleted(t *testing.T, s *session, e example, run mesh.TaskRun, text string) {
	t.Helper()
	if run.Status != mesh.StatusCompleted || !strings.Contains(string(run.Output), text) {
		t.Fatalf("%s: the task ended %s with %s, want completed with %q\n%s", e, run.Status, run.Output, text, s.log())
	}
}

// TestDocs_READMERunsAsWritten: the README's quick start (an agent, a
// pairing code, pairing the runtime with the echo adapter it runs, a task
// waited for, the event tail), its sign-in link and its A2A example (an API
// key, then a message) run as written against a real platform.
func TestDocs_READMERunsAsWritten(t *testing.T) {
	t.Parallel()
	usesDefaultAdapterPort(t)
	all := examples(t, "README.md")
	s := newSession(t)
	ran := map[int]bool{}

	quick := find(t, all, "a2a-runtime pair <PAIRING_CODE> --api-base http://127.0.0.1:3000")
	ran[quick.line] = true
	outs := s.run(quick)
	var run struct {
		ID     string `json:"task_run_id"`
		Status string `json:"status"`
		Output struct {
			Text string `json:"text"`
		} `json:"output"`
	}
	last := outs[len(outs)-1]
	if !strings.Contains(last.command, "tasks create") || json.Unmarshal([]byte(last.stdout), &run) != nil || run.Status != "completed" || !strings.Contains(run.Output.Text, "hello") {
		t.Fatalf("%s: the task did not complete with the echo: %s\n%s", quick, last.stdout, s.log())
	}
	s.stillRunning(quick)
	// The tail shows what happens from the moment it is connected on, which
	// this side cannot see: a new run is created until the tail shows one.
	tail := regexp.MustCompile(`events tail`)
	shown := func(id string) bool { return strings.Contains(s.backgroundOutput(tail), id) }
	deadline := time.Now().Add(30 * time.Second)
	for seen := false; !seen; {
		if time.Now().After(deadline) {
			t.Fatalf("events tail showed none of the runs created in 30s:\n%s", s.backgroundOutput(tail))
		}
		next := s.p.CreateTask(s.placeholders["<agent_id>"], "tailed")
		for until := time.Now().Add(2 * time.Second); !seen && time.Now().Before(until); {
			seen = shown(next.ID)
			if !seen {
				select {
				case <-time.After(50 * time.Millisecond):
				case <-t.Context().Done():
					t.Fatal("test ended")
				}
			}
		}
	}

	login := find(t, all, "a2a-platform login")
	ran[login.line] = true
	for _, out := range s.run(login) {
		if !strings.Contains(out.stdout, s.p.APIBase+"/login?code=") {
			t.Errorf("%s: %q printed no sign-in link: %s", login, out.command, s.redact(out.stdout))
		}
	}

	a2a := find(t, all, "/api-keys")
	ran[a2a.line] = true
	outs = s.run(a2a)
	if got := outs[len(outs)-1].stdout; !strings.Contains(got, `"TASK_STATE_COMPLETED"`) || !strings.Contains(got, "hello") {
		t.Fatalf("%s: the A2A message did not complete: %s\n%s", a2a, got, s.log())
	}
	accountFor(t, all, ran)
}

// TestDocs_A2AExamplesRunAsWritten: docs/a2a.md's example (an API key into
// KEY, a 1.0 message, the same in 0.3) runs as written, with AGENT set to an
// online agent's id as the text before it says.
func TestDocs_A2AExamplesRunAsWritten(t *testing.T) {
	t.Parallel()
	all := examples(t, "docs/a2a.md")
	s := newSession(t)
	agent := s.p.CreateAgent("documented")
	adapterAddr := meshtest.FreeAddr(t)
	code := s.p.PairingCode(agent.ID)
	s.secrets = append(s.secrets, code)
	s.foreground(example{file: "setup"}, "bin/a2a-runtime pair "+code+" --api-base "+s.p.APIBase+" --local-agent-endpoint http://"+adapterAddr+"/run-task --adapter echo")
	s.start(example{file: "setup"}, "bin/a2a-runtime start")
	s.env = append(s.env, "AGENT="+agent.ID)

	ran := map[int]bool{}
	v1 := find(t, all, "SendMessage")
	ran[v1.line] = true
	outs := s.run(v1)
	if got := outs[len(outs)-1].stdout; !strings.Contains(got, `"TASK_STATE_COMPLETED"`) {
		t.Fatalf("%s: the 1.0 message did not complete: %s\n%s", v1, got, s.log())
	}
	v03 := find(t, all, "message/send")
	ran[v03.line] = true
	outs = s.run(v03)
	if got := outs[len(outs)-1].stdout; !strings.Contains(got, `"kind":"task"`) || !strings.Contains(got, `"completed"`) {
		t.Fatalf("%s: the 0.3 message did not complete: %s\n%s", v03, got, s.log())
	}
	accountFor(t, all, ran)
}

// TestDocs_AdapterExamplesRunAsWritten: docs/adapter.md's examples (the
// echo adapter and its contract over curl, then a program of the reader's
// own behind the command provider) run as written.
func TestDocs_AdapterExamplesRunAsWritten(t *testing.T) {
	t.Parallel()
	usesDefaultAdapterPort(t)
	all := examples(t, "docs/adapter.md")
	s := newSessionWithoutPlatform(t)
	ran := map[int]bool{}

	echo := find(t, all, "--provider echo &")
	ran[echo.line] = true
	outs := s.run(echo)
	if got := outs[0].stdout; !strings.Contains(got, `"ok":true`) || !strings.Contains(got, `"provider":"echo"`) {
		t.Errorf("%s: /health answered %s", echo, got)
	}
	if got := outs[1].stdout; !strings.Contains(got, `"success":true`) || !strings.Contains(got, `"text":"hello"`) {
		t.Errorf("%s: /run-task answered %s", echo, got)
	}

	own := find(t, all, "--provider command")
	ran[own.line] = true
	outs = s.run(own)
	if got := outs[len(outs)-1].stdout; !strings.Contains(got, `"success":true`) || !strings.Contains(got, "my agent got: hello (--flag)") {
		t.Errorf("%s: /run-task answered %s", own, got)
	}
	s.stillRunning(own)
	accountFor(t, all, ran)
}

// TestDocs_EventsExamplesRunAsWritten: docs/events.md's consumer
// credentials are created as written, for one agent and for one event type.
func TestDocs_EventsExamplesRunAsWritten(t *testing.T) {
	t.Parallel()
	all := examples(t, "docs/events.md")
	s := newSession(t)
	s.placeholders["<agent_id>"] = s.p.CreateAgent("billed").ID
	ran := map[int]bool{}

	create := find(t, all, "consumers create")
	ran[create.line] = true
	for _, out := range s.run(create) {
		var c struct {
			Credential  string   `json:"credential"`
			DurableName string   `json:"durable_name"`
			Subjects    []string `json:"subjects"`
		}
		if json.Unmarshal([]byte(out.stdout), &c) != nil || !strings.HasPrefix(c.Credential, "a2acon_") || c.DurableName == "" || len(c.Subjects) == 0 {
			t.Errorf("%s: %q answered %s", create, out.command, s.redact(out.stdout))
		}
	}
	accountFor(t, all, ran)
}

// TestDocs_RuntimeExamplesRunAsWritten: docs/runtime.md's pairing with the
// echo adapter, then with a program of the reader's own that the runtime
// runs behind the command provider, each followed by a plain start, work
// as written: the agent's tasks complete with the adapter's answer.
func TestDocs_RuntimeExamplesRunAsWritten(t *testing.T) {
	t.Parallel()
	usesDefaultAdapterPort(t)
	all := examples(t, "docs/runtime.md")
	s := newSession(t)
	agent := s.p.CreateAgent("documented runtime")
	newCode := func() {
		code := s.p.PairingCode(agent.ID)
		s.secrets = append(s.secrets, code)
		s.placeholders["<PAIRING_CODE>"] = code
	}
	ran := map[int]bool{}

	newCode()
	echo := find(t, all, "--adapter echo")
	ran[echo.line] = true
	s.run(echo)
	s.stillRunning(echo)
	wantCompleted(t, s, echo, waitTask(t, s, s.p.CreateTask(agent.ID, "hello").ID), "hello")
	s.stopBackground()

	newCode()
	own := find(t, all, "--adapter command")
	ran[own.line] = true
	s.run(own)
	s.stillRunning(own)
	wantCompleted(t, s, own, waitTask(t, s, s.p.CreateTask(agent.ID, "hello").ID), "my agent got: hello")
	accountFor(t, all, ran)
}
