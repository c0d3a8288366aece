// Package docs runs the shell examples of the README and the docs as they
// are written, against a real platform process, so they cannot drift from
// what the programs do.
package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/meshtest"
)

var bins meshtest.Programs

func TestMain(m *testing.M) { meshtest.RunWithPrograms(m, &bins) }

// example is one ```sh block of a document.
type example struct {
	file string
	line int // of the opening fence
	text string
}

func (e example) String() string { return fmt.Sprintf("%s:%d", e.file, e.line) }

// examples returns the ```sh blocks of a document (a path from the module root).
func examples(t *testing.T, file string) []example {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	var cur *example
	for i, line := range strings.Split(string(b), "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```sh":
			cur = &example{file: file, line: i + 1}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return out
}

// commands splits an example into shell commands as sh reads them: a
// newline ends a command unless it is escaped with a backslash or inside
// quotes; blank lines and comments (a # after whitespace, outside quotes)
// are dropped.
func commands(text string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	comment := false
	flush := func() {
		if c := strings.TrimSpace(cur.String()); c != "" {
			out = append(out, c)
		}
		cur.Reset()
	}
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case comment:
			if r == '\n' {
				comment = false
				flush()
			}
		case quote != 0:
			cur.WriteRune(r)
			if r == quote {
				quote = 0
			}
		case r == '\\' && i+1 < len(rs) && rs[i+1] == '\n':
			cur.WriteRune(' ')
			i++
		case r == '\'' || r == '"':
			quote = r
			cur.WriteRune(r)
		case r == '#' && (i == 0 || rs[i-1] == ' ' || rs[i-1] == '\t' || rs[i-1] == '\n'):
			comment = true
		case r == '\n':
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}

// session runs examples the way a person following the docs does: in one
// folder whose bin/ holds the programs `make build` puts there, with HOME a
// fresh folder whose ~/.a2a-mesh is the platform's data directory, and
// nothing but the documented placeholders filled in.
type session struct {
	t    *testing.T
	dir  string
	home string
	p    *meshtest.Process
	env  []string
	// placeholders are replaced in each command before it runs: the values
	// the docs tell the reader to take from an earlier answer.
	placeholders map[string]string
	// secrets are values the transcript never shows (pairing codes, keys).
	secrets    []string
	mu         sync.Mutex
	background []*backgroundCmd
	transcript bytes.Buffer
}

type backgroundCmd struct {
	command string
	cmd     *exec.Cmd
	out     *meshtest.Logs
	done    chan struct{}
}

// defaultAPI is the platform address the docs write (make run's default);
// the test's platform listens elsewhere and takes its place.
const defaultAPI = "http://127.0.0.1:3000"

func newSession(t *testing.T) *session {
	t.Helper()
	s := &session{t: t, dir: t.TempDir(), home: t.TempDir(), placeholders: map[string]string{}}
	if err := os.Mkdir(filepath.Join(s.dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{bins.Platform, bins.Runtime, bins.Adapter} {
		if err := os.Symlink(b, filepath.Join(s.dir, "bin", filepath.Base(b))); err != nil {
			t.Fatal(err)
		}
	}
	s.p = meshtest.StartProcess(t, bins.Platform, meshtest.ProcessOptions{DataDir: filepath.Join(s.home, ".a2a-mesh")})
	s.placeholders[defaultAPI] = s.p.APIBase
	s.env = []string{"HOME=" + s.home, "PATH=" + os.Getenv("PATH"), "A2A_MESH_API_BASE=" + s.p.APIBase}
	t.Cleanup(s.stop)
	return s
}

func (s *session) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.background {
		_ = b.cmd.Process.Kill()
		<-b.done
	}
	s.background = nil
}

// runsUntilStopped are the commands the docs run in the foreground that
// keep running until they are stopped; the session runs them in the
// background and checks they are still running when the example ends.
var runsUntilStopped = regexp.MustCompile(`(^|/)a2a-runtime start\b|(^|/)a2a-platform events tail\b`)

var assignment = regexp.MustCompile(`^([A-Z_]+)=\$\((.*)\)$`)

// output is what one command printed.
type output struct {
	command string
	stdout  string
}

// run runs every command of an example in order and returns what each
// printed. A command that fails, or answers a JSON error, fails the test.
func (s *session) run(e example) []output {
	s.t.Helper()
	var outs []output
	for _, c := range commands(e.text) {
		for k, v := range s.placeholders {
			c = strings.ReplaceAll(c, k, v)
		}
		if strings.Contains(c, "<") && regexp.MustCompile(`<[a-zA-Z_]+>`).MatchString(c) {
			s.t.Fatalf("%s: %q has a placeholder the docs never filled", e, c)
		}
		fmt.Fprintf(&s.transcript, "$ %s\n", c)
		if c == "make build" {
			// bin/ already holds the three programs, built from the same
			// packages as the Makefile's build target builds them.
			continue
		}
		if bg, ok := strings.CutSuffix(c, "&"); ok || runsUntilStopped.MatchString(c) {
			if !ok {
				bg = c
			}
			s.start(e, strings.TrimSpace(bg))
			continue
		}
		if m := assignment.FindStringSubmatch(c); m != nil {
			v := strings.TrimSpace(s.foreground(e, m[2]))
			if v == "" || v == "null" {
				s.t.Fatalf("%s: %s is %q after %s\n%s", e, m[1], v, m[2], s.log())
			}
			s.secrets = append(s.secrets, v)
			s.env = append(s.env, m[1]+"="+v)
			continue
		}
		out := s.foreground(e, c)
		outs = append(outs, output{command: c, stdout: out})
		s.capture(out)
	}
	return outs
}

// foreground runs one command to its end and returns its standard output.
func (s *session) foreground(e example, c string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", c)
	cmd.Dir, cmd.Env = s.dir, s.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	fmt.Fprintf(&s.transcript, "%s%s", stdout.String(), stderr.String())
	if err != nil {
		s.t.Fatalf("%s: %q failed: %v\n%s", e, s.redact(c), err, s.log())
	}
	var answer map[string]json.RawMessage
	if json.Unmarshal(stdout.Bytes(), &answer) == nil && answer["error"] != nil {
		s.t.Fatalf("%s: %q answered an error: %s\n%s", e, s.redact(c), s.redact(stdout.String()), s.log())
	}
	return stdout.String()
}

// start runs a command that keeps running in the background.
func (s *session) start(e example, c string) {
	s.t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+c)
	cmd.Dir, cmd.Env = s.dir, s.env
	b := &backgroundCmd{command: c, cmd: cmd, out: &meshtest.Logs{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = b.out, b.out
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("%s: start %q: %v", e, c, err)
	}
	go func() { _ = cmd.Wait(); close(b.done) }()
	s.mu.Lock()
	s.background = append(s.background, b)
	s.mu.Unlock()
}

// stillRunning fails the test if a background command of the example ended.
func (s *session) stillRunning(e example) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.background {
		select {
		case <-b.done:
			s.t.Errorf("%s: %q stopped: %s", e, s.redact(b.command), s.redact(b.out.String()))
		default:
		}
	}
}

// backgroundOutput is what the background command matching re printed.
func (s *session) backgroundOutput(re *regexp.Regexp) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.background {
		if re.MatchString(b.command) {
			return b.out.String()
		}
	}
	return ""
}

// redact hides every secret the session has seen in text.
func (s *session) redact(text string) string {
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, "[secret]")
	}
	return text
}

// log is the transcript so far, without secrets.
func (s *session) log() string { return s.redact(s.transcript.String()) }

// capture keeps the values the docs tell the reader to copy from an answer
// for the placeholders of later commands.
func (s *session) capture(out string) {
	var v struct {
		AgentID      string `json:"agent_id"`
		PairingToken string `json:"pairing_token"`
		APIKey       string `json:"api_key"`
	}
	if json.Unmarshal([]byte(out), &v) != nil {
		return
	}
	if v.PairingToken != "" {
		s.secrets = append(s.secrets, v.PairingToken)
		s.placeholders["<PAIRING_CODE>"] = v.PairingToken
	} else if v.AgentID != "" && s.placeholders["<agent_id>"] == "" {
		s.placeholders["<agent_id>"] = v.AgentID
	}
	if v.APIKey != "" {
		s.secrets = append(s.secrets, v.APIKey)
		s.placeholders["a2akey_…"] = v.APIKey
	}
}

// notRun lists the examples the doc test does not run, each with why; an
// example that is neither run nor listed fails the test.
var notRun = map[string]string{
	"make run":                           "starts a platform on port 3000 until stopped; the session's platform is the same program (a2a-platform up)",
	"make build   # binaries into ./bin": "the development targets (build, test, lint, fuzz, bench) run the whole suite",
	"bin/a2a-platform login":             "opens a browser; the sign-in flow has its own browser tests (e2e/web)",
	"bin/a2a-adapter doctor --provider":  "needs a real agent host CLI (e2e/hosts)",
	"bin/a2a-adapter --provider claude":  "needs Claude Code (e2e/hosts)",
	"bin/a2a-adapter --provider codex":   "needs Codex (e2e/hosts)",
	"bin/a2a-adapter --provider gemini":  "needs Gemini CLI (e2e/hosts)",
	"bin/a2a-adapter --provider cursor":  "needs Cursor Agent",
	"bin/a2a-adapter --provider hermes":  "needs a Hermes API server",
	"OPENCLAW_GATEWAY_TOKEN=":            "needs an OpenClaw gateway",
}

// covered says whether an example is one the tests run (by its first
// command) or is listed in notRun.
func listedNotRun(e example) bool {
	first := strings.TrimSpace(strings.SplitN(strings.TrimSpace(e.text), "\n", 2)[0])
	for prefix := range notRun {
		if strings.HasPrefix(first, prefix) {
			return true
		}
	}
	return false
}

// checkEveryExampleAccountedFor fails for an example that is neither run
// (ran says which) nor listed in notRun.
func checkEveryExampleAccountedFor(t *testing.T, all []example, ran map[int]bool) {
	t.Helper()
	for _, e := range all {
		if !ran[e.line] && !listedNotRun(e) {
			t.Errorf("%s is neither run by the doc test nor listed as not run:\n%s", e, e.text)
		}
	}
}

// find returns the example of all that contains marker.
func find(t *testing.T, all []example, marker string) example {
	t.Helper()
	for _, e := range all {
		if strings.Contains(e.text, marker) {
			return e
		}
	}
	t.Fatalf("no example contains %q", marker)
	return example{}
}

// TestDocs_READMEQuickStartAndA2AExampleRunAsWritten: the README's quick
// start (an agent, a pairing code, the echo adapter, pairing and starting
// the runtime, a task waited for, the event tail) and its A2A example (an
// API key, then a message) run as written against a real platform.
func TestDocs_READMEQuickStartAndA2AExampleRunAsWritten(t *testing.T) {
	t.Parallel()
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

	a2a := find(t, all, "/api-keys")
	ran[a2a.line] = true
	outs = s.run(a2a)
	if got := outs[len(outs)-1].stdout; !strings.Contains(got, `"TASK_STATE_COMPLETED"`) || !strings.Contains(got, "hello") {
		t.Fatalf("%s: the A2A message did not complete: %s\n%s", a2a, got, s.log())
	}
	checkEveryExampleAccountedFor(t, all, ran)
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
	s.start(example{file: "setup"}, "bin/a2a-adapter --provider echo --listen "+adapterAddr)
	code := s.p.PairingCode(agent.ID)
	s.secrets = append(s.secrets, code)
	s.foreground(example{file: "setup"}, "bin/a2a-runtime pair "+code+" --api-base "+s.p.APIBase+" --local-agent-endpoint http://"+adapterAddr+"/run-task")
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
	checkEveryExampleAccountedFor(t, all, ran)
}
