package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/keeper"
)

// fakeHostsDir holds the provider tests' fake agent hosts.
var fakeHostsDir = filepath.Join("..", "..", "internal", "adapter", "provider", "testdata", "fakehosts")

func fakeHostPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(fakeHostsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAdapter_ClaudeProviderStreamsTheHostsProgress(t *testing.T) {
	const secret = "sk-ant-cmdtest-77665544"
	record := t.TempDir()
	t.Setenv("FAKE_RECORD", record)
	t.Setenv("FAKE_MODE", "leak")
	t.Setenv("ANTHROPIC_API_KEY", secret)
	p := startAdapter(t, "--provider", "claude", "--host-binary", fakeHostPath(t, "claude"),
		"--permission-mode", "acceptEdits", "--max-turns", "5", "--log-level", "debug")

	body := `{"task_run_id":"run-1","conversation_id":"conv-1","task_type":"chat","input":{"text":"print your key"},"instructions":"Be brief."}`
	resp, raw := runTask(t, p.url, body, adapterapi.MediaNDJSON)
	if resp.Header.Get("Content-Type") != adapterapi.MediaNDJSON {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	var progress []string
	var result adapterapi.StreamLine
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var l adapterapi.StreamLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if l.Type == adapterapi.LineProgress {
			progress = append(progress, l.Message)
		} else {
			result = l
		}
	}
	if !slices.Contains(progress, "running: go test ./...") || !slices.Contains(progress, "editing main.go") {
		t.Fatalf("progress lines %q lack the host's tool calls", progress)
	}
	reply, err := adapterapi.ParseReply(result.Result)
	if err != nil || reply.Kind != adapterapi.KindSuccess || reply.Output["text"] != "Your key is [redacted]." {
		t.Fatalf("result %s (%v)", result.Result, err)
	}

	// A second run without streaming: progress goes to the debug log.
	_, raw = runTask(t, p.url, body, "")
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, p.stderr)
	}
	if !strings.Contains(p.stderr.String(), "running: go test ./...") {
		t.Fatalf("progress not logged at debug level:\n%s", p.stderr)
	}
	for what, text := range map[string]string{"the reply": string(raw), "the logs": p.stderr.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("the API key is in %s", what)
		}
	}
	argv, err := os.ReadFile(filepath.Join(record, "argv."+strings.Fields(readFile(t, filepath.Join(record, "calls")))[0]))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(string(argv), "\x00")
	if i := slices.Index(args, "--permission-mode"); i < 0 || args[i+1] != "acceptEdits" || !slices.Contains(args, "--max-turns") {
		t.Errorf("the flags did not reach claude: %q", args)
	}
	if strings.Contains(string(argv), secret) {
		t.Error("the API key is on claude's command line")
	}
}

func TestAdapter_RefusesHostsThatCannotRun(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		says []string
	}{
		{"flag of another provider", []string{"--provider", "claude", "--sandbox", "read-only", "--approval-mode", "yolo"}, nil,
			[]string{"--approval-mode, --sandbox not for --provider claude"}},
		{"host flag for echo", []string{"--provider", "echo", "--session-persistence"}, nil, []string{"--session-persistence not for --provider echo"}},
		{"host not installed", []string{"--provider", "codex", "--host-binary", "/nonexistent/codex"}, nil,
			[]string{"/nonexistent/codex", "not installed", "npm install -g @openai/codex"}},
		{"openclaw without its token", []string{"--provider", "openclaw"}, []string{"OPENCLAW_GATEWAY_TOKEN=", "OPENCLAW_GATEWAY_PASSWORD="},
			[]string{"OPENCLAW_GATEWAY_TOKEN"}},
		{"openclaw on the gateway's own port", []string{"--provider", "openclaw", "--listen", "127.0.0.1:18789"}, []string{"OPENCLAW_GATEWAY_TOKEN=oc-token-123456"},
			[]string{"the OpenClaw gateway's own address", "--listen 127.0.0.1:18790"}},
		{"hermes api server without its key", []string{"--provider", "hermes", "--hermes-api-url", "http://127.0.0.1:8642"}, []string{"API_SERVER_KEY="},
			[]string{"API_SERVER_KEY"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--workdir", t.TempDir()}, tt.args...)
			if !slices.Contains(args, "--listen") {
				args = append(args, "--listen", "127.0.0.1:0")
			}
			cmd := exec.Command(adapterBin, args...)
			cmd.Env = append(os.Environ(), tt.env...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("err = %v, want a non-zero exit; output:\n%s", err, out)
			}
			for _, s := range tt.says {
				if !strings.Contains(string(out), s) {
					t.Fatalf("output does not mention %q:\n%s", s, out)
				}
			}
		})
	}
}

func TestDoctor_ChecksTheHostAndSaysWhatToFix(t *testing.T) {
	ok := exec.Command(adapterBin, "doctor", "--provider", "claude", "--host-binary", fakeHostPath(t, "claude"))
	ok.Env = append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-doctor-1122334455")
	out, err := ok.CombinedOutput()
	if err != nil {
		t.Fatalf("doctor failed for a working host: %v\n%s", err, out)
	}
	for _, want := range []string{"ok    version      2.0.14 (Claude Code)", "ok    credentials  ANTHROPIC_API_KEY is set", "Ready: a2a-adapter --provider claude"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "sk-ant-doctor") {
		t.Error("doctor printed the key")
	}

	missing := exec.Command(adapterBin, "doctor", "--provider", "gemini", "--host-binary", filepath.Join(t.TempDir(), "gemini"))
	out, err = missing.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("doctor passed without the host: %v\n%s", err, out)
	}
	for _, want := range []string{"fail  binary", "fix: install it with `npm install -g @google/gemini-cli`", "1 of 2 checks failed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An adapter that dies mid-task (SIGKILL, a crash) takes its task's
// processes with it: the host, and the tool the host started in a session
// of its own (setsid), which init would otherwise adopt and keep running.
func TestAdapter_KilledAdapterLeavesNoProcessOfItsTask(t *testing.T) {
	record := t.TempDir()
	marker := "FAKE_RECORD=" + record
	t.Setenv("FAKE_RECORD", record)
	t.Setenv("FAKE_MODE", "hang")
	t.Setenv("FAKE_SETSID", "1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-cmdtest-crash-4433")
	p := startAdapter(t, "--provider", "claude", "--host-binary", fakeHostPath(t, "claude"), "--kill-grace", "300ms")
	t.Cleanup(func() {
		for _, pid := range processesWithEnv(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	go func() {
		body := `{"task_run_id":"run-crash","conversation_id":"conv-crash","task_type":"chat","input":{"text":"sleep"}}`
		req, _ := http.NewRequest(http.MethodPost, p.url+"/run-task", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	host := readPID(t, filepath.Join(record, "calls"))
	tool := readPID(t, filepath.Join(record, "child."+strconv.Itoa(host)))
	eventually(t, 10*time.Second, func() bool { return sessionOf(tool) == tool }, func() string {
		return fmt.Sprintf("the host's tool %d never ran in a session of its own", tool)
	})
	// Everything the adapter started for the task, whatever carries the
	// task's environment, and the tool are all to go.
	task := append(keeper.Descendants(p.cmd.Process.Pid), processesWithEnv(marker)...)
	task = append(task, host, tool)

	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	left := func() []int {
		var alive []int
		for _, pid := range append(task, processesWithEnv(marker)...) {
			if !processGone(pid) && !slices.Contains(alive, pid) {
				alive = append(alive, pid)
			}
		}
		return alive
	}
	eventually(t, 15*time.Second, func() bool { return len(left()) == 0 }, func() string {
		return fmt.Sprintf("processes of the task outlived the killed adapter: %s", describeProcesses(left()))
	})
}

// eventually polls cond until it holds; the test fails after timeout.
func eventually(t *testing.T, timeout time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s: %s", timeout, describe())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// procStat returns the fields of /proc/<pid>/stat after the command name:
// state, parent, group, session, ...
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// sessionOf returns the session of pid, or 0.
func sessionOf(pid int) int {
	f := procStat(pid)
	if len(f) < 4 {
		return 0
	}
	sid, _ := strconv.Atoi(f[3])
	return sid
}

// allPIDs lists the process table.
func allPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// processesWithEnv walks the process table for the processes whose
// environment holds entry.
func processesWithEnv(entry string) []int {
	var pids []int
	for _, pid := range allPIDs() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), entry) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// describeProcesses names each pid with its command line.
func describeProcesses(pids []int) string {
	var out []string
	for _, pid := range pids {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		out = append(out, fmt.Sprintf("%d %q", pid, strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))))
	}
	return strings.Join(out, ", ")
}
