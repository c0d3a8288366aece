package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/testkit/syncbuf"
)

// adapterBin is the a2a-adapter binary built for these tests.
var adapterBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "a2a-adapter-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	adapterBin = filepath.Join(dir, "a2a-adapter")
	build := exec.Command(goTool(), "build", "-o", adapterBin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build a2a-adapter:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// adapterProcess is a running a2a-adapter.
type adapterProcess struct {
	cmd            *exec.Cmd
	url            string
	stdout, stderr *syncbuf.Buffer
	exited         chan error
}

// startAdapter runs a2a-adapter with args on a free loopback port and waits
// for the log line saying where it listens.
func startAdapter(t *testing.T, args ...string) *adapterProcess {
	t.Helper()
	return startAdapterEnv(t, nil, args...)
}

// startAdapterEnv is startAdapter with variables added to the environment.
func startAdapterEnv(t *testing.T, env []string, args ...string) *adapterProcess {
	t.Helper()
	args = append([]string{"--listen", "127.0.0.1:0", "--workdir", t.TempDir()}, args...)
	cmd := exec.Command(adapterBin, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &adapterProcess{cmd: cmd, stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, exited: make(chan error, 1)}
	cmd.Stdout = p.stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	urls := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			p.stderr.Write(append(lines.Bytes(), '\n'))
			var entry struct {
				URL string `json:"url"`
			}
			if json.Unmarshal(lines.Bytes(), &entry) == nil && entry.URL != "" {
				select {
				case urls <- entry.URL:
				default:
				}
			}
		}
		p.exited <- cmd.Wait()
	}()
	select {
	case p.url = <-urls:
	case <-time.After(15 * time.Second):
		t.Fatalf("a2a-adapter did not log where it listens; stderr:\n%s", p.stderr)
	}
	return p
}

// stop sends sig and returns the exit error.
func (p *adapterProcess) stop(t *testing.T, sig os.Signal) error {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
		return err
	case <-time.After(15 * time.Second):
		t.Fatalf("a2a-adapter did not exit after %s; stderr:\n%s", sig, p.stderr)
		return nil
	}
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func runTask(t *testing.T, url, body string, accept string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/run-task", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestAdapter_RunsTasksThroughACommandOverHTTP(t *testing.T) {
	script := writeScript(t, `
echo "progress: 50% thinking" >&2
printf '# Report\n' > "$A2A_OUTPUT_DIR/report.md"
printf 'answer to: '
cat
`)
	p := startAdapter(t, "--provider", "command", "--", script)

	resp, err := http.Get(p.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var health adapterapi.Health
	err = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if err != nil || health != (adapterapi.Health{OK: true, Provider: "command", KeepAlive: true}) {
		t.Fatalf("health = %+v, %v", health, err)
	}

	body := `{"task_run_id":"run-1","conversation_id":"conv-1","task_type":"chat","input":{"text":"what is 6x7"},"platform":{"name":"A2A","origin":"ysee.tech"}}`
	_, raw := runTask(t, p.url, body, "")
	reply, err := adapterapi.ParseReply(raw)
	if err != nil || reply.Kind != adapterapi.KindSuccess || reply.Output["text"] != "answer to: what is 6x7" {
		t.Fatalf("reply %s (%v)", raw, err)
	}
	writes, err := adapterapi.ArtifactWrites(reply.Output)
	if err != nil || len(writes) != 1 || writes[0].Filename != "report.md" || writes[0].ContentText != "# Report\n" || writes[0].MimeType != "text/markdown" {
		t.Fatalf("artifacts = %+v (%v)", writes, err)
	}

	resp, raw = runTask(t, p.url, body, adapterapi.MediaNDJSON)
	if resp.Header.Get("Content-Type") != adapterapi.MediaNDJSON {
		t.Fatalf("streaming Content-Type = %q", resp.Header.Get("Content-Type"))
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"type":"progress"`) || !strings.Contains(lines[0], `"percent":50`) || !strings.Contains(lines[1], `"type":"result"`) {
		t.Fatalf("stream = %q, want a progress line then the result", lines)
	}

	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, p.stderr)
	}
	if strings.Contains(p.stderr.String(), "what is 6x7") {
		t.Fatal("the adapter logged the task text at the default level")
	}
}

func TestAdapter_ShutdownStopsTheRunningTasksProcesses(t *testing.T) {
	pids := t.TempDir()
	script := writeScript(t, `sleep 1000 &
echo $! > "`+pids+`/child"
echo $$ > "`+pids+`/script"
wait
`)
	p := startAdapter(t, "--provider", "command", "--shutdown-grace", "100ms", "--kill-grace", "200ms", "--", script)
	replies := make(chan []byte, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, p.url+"/run-task", strings.NewReader(`{"task_run_id":"r","input":{"text":"x"}}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			replies <- []byte(err.Error())
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		replies <- b
	}()
	scriptPID, childPID := readPID(t, filepath.Join(pids, "script")), readPID(t, filepath.Join(pids, "child"))

	if err := p.stop(t, os.Interrupt); err != nil {
		t.Fatalf("exit after SIGINT: %v; stderr:\n%s", err, p.stderr)
	}
	select {
	case raw := <-replies:
		if reply, err := adapterapi.ParseReply(raw); err != nil || reply.Kind != adapterapi.KindFailure || !strings.Contains(reply.Error, "shutting down") {
			t.Fatalf("reply %s (%v), want the shutdown failure", raw, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
	}
	for name, pid := range map[string]int{"script": scriptPID, "background child": childPID} {
		deadline := time.Now().Add(5 * time.Second)
		for !processGone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s (pid %d) outlived the adapter", name, pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestAdapter_AuthTokenFileGuardsRunTask(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startAdapter(t, "--provider", "echo", "--auth-token-file", tokenFile)
	body := `{"task_run_id":"r","input":{"text":"hi"}}`
	if resp, _ := runTask(t, p.url, body, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, p.url+"/run-task", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer tok-123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with the token: %d, want 200", resp.StatusCode)
	}
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.stderr.String(), "tok-123") {
		t.Fatal("the token appears in the logs")
	}
}

func TestAdapter_RefusesBadFlags(t *testing.T) {
	emptyToken := filepath.Join(t.TempDir(), "empty-token")
	if err := os.WriteFile(emptyToken, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		says string
	}{
		{"remote listen", []string{"--provider", "echo", "--listen", "0.0.0.0:0"}, "--allow-remote"},
		{"remote listen, all interfaces", []string{"--provider", "echo", "--listen", ":0"}, "non-loopback"},
		{"allow-remote without token", []string{"--provider", "echo", "--listen", "0.0.0.0:0", "--allow-remote"}, "--auth-token-file"},
		{"command without argv", []string{"--provider", "command"}, "needs the command after --"},
		{"no provider", nil, "--provider is required"},
		{"unknown provider", []string{"--provider", "nope"}, "unknown --provider"},
		{"argv for echo", []string{"--provider", "echo", "--", "true"}, "only for --provider command"},
		{"missing command", []string{"--provider", "command", "--", "a2a-no-such-command"}, "a2a-no-such-command"},
		{"negative queue", []string{"--provider", "echo", "--queue-size", "-1"}, "--queue-size"},
		{"missing instruction file", []string{"--provider", "echo", "--instruction-file", "/nonexistent/x"}, "--instruction-file"},
		{"unknown flag", []string{"--provider", "echo", "--bogus"}, "unknown flag"},
		{"empty token file", []string{"--provider", "echo", "--auth-token-file", emptyToken}, "empty"},
		{"command before --", []string{"--provider", "command", "./agent.sh"}, "after --"},
		{"mistyped subcommand", []string{"doctr"}, "did you mean doctor?"},
		{"unknown flag points to help", []string{"--provider", "echo", "--provder", "x"}, "Run 'a2a-adapter --help'"},
		{"doctor's unknown flag points to its help", []string{"doctor", "--provder", "x"}, "Run 'a2a-adapter doctor --help'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(adapterBin, append([]string{"--workdir", t.TempDir()}, tt.args...)...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("err = %v, want a non-zero exit; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), tt.says) {
				t.Fatalf("output does not mention %q:\n%s", tt.says, out)
			}
		})
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processGone reports whether pid no longer runs; a zombie waiting for init
// to collect it counts as gone.
func processGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	if runtime.GOOS != "linux" {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// Without a token the adapter still works, as before, but says at start
// that anyone on the machine may post work to it.
func TestAdapter_WithoutATokenWarnsThatAnyLocalUserMayPostWork(t *testing.T) {
	p := startAdapter(t, "--provider", "echo")
	if resp, _ := runTask(t, p.url, `{"task_run_id":"r","input":{"text":"hi"}}`, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("task without a token: %d, want 200", resp.StatusCode)
	}
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var warning map[string]any
	for _, line := range strings.Split(p.stderr.String(), "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil && entry["level"] == "warn" && strings.Contains(fmt.Sprint(entry["message"]), "anyone") {
			warning = entry
		}
	}
	if warning == nil || !strings.Contains(fmt.Sprint(warning["message"]), "--auth-token-file") {
		t.Fatalf("no warning naming --auth-token-file that anyone on this machine may post tasks; stderr:\n%s", p.stderr)
	}
}

// A token file other users may read is no secret.
func TestAdapter_RefusesATokenFileOthersMayRead(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An adapter that took the file would serve until killed.
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, adapterBin, "--workdir", t.TempDir(), "--listen", "127.0.0.1:0", "--provider", "echo", "--auth-token-file", tokenFile).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || ctx.Err() != nil || !strings.Contains(string(out), "chmod 600") || strings.Contains(string(out), "tok-123") {
		t.Fatalf("err = %v, want a refusal saying chmod 600 without the token; output:\n%s", err, out)
	}
}
