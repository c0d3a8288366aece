package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// waitStart bounds a process start or a step of the page on a busy machine.
const waitStart = 30 * time.Second

// proc is a program a test started; it is killed when the test ends.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  meshtest.Logs
	done chan struct{}
}

func start(t *testing.T, name string, env []string, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("---- output of %s ----\n%s", p.name, tail(p.out.String(), 6000))
		}
	})
	return p
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (p *proc) kill() {
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
}

// stop sends SIGTERM and waits for the process to exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(waitStart):
		t.Fatalf("%s did not exit on SIGTERM", p.name)
	}
}

// waitOutput waits until the process has printed text.
func (p *proc) waitOutput(t *testing.T, text string) {
	t.Helper()
	meshtest.Eventually(t, waitStart, func() bool {
		if strings.Contains(p.out.String(), text) {
			return true
		}
		if !p.running() {
			t.Fatalf("%s exited before printing %q:\n%s", p.name, text, tail(p.out.String(), 4000))
		}
		return false
	}, func() string {
		return fmt.Sprintf("%s never printed %q:\n%s", p.name, text, tail(p.out.String(), 4000))
	})
}

// logLine returns the first JSON log line whose message is msg.
func (p *proc) logLine(msg string) map[string]any { return meshtest.LogLine(p.out.String(), msg) }

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// run runs a command to its end and returns its output.
func run(t *testing.T, env []string, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// platformProc is `a2a-platform up` as its own process; it restarts on the
// same data dir and ports.
type platformProc struct {
	*meshtest.Platform
	t                  *testing.T
	dataDir            string
	httpAddr, natsAddr string
	proc               *proc
	// logs holds the output of every start, for the secret scans.
	logs []*proc
}

func startPlatform(t *testing.T) *platformProc {
	t.Helper()
	// Reserved ports: a restart binds them again (see meshtest.FreeAddr).
	p := &platformProc{t: t, dataDir: t.TempDir(), httpAddr: meshtest.FreeAddr(t), natsAddr: meshtest.FreeAddr(t)}
	p.boot()
	return p
}

func (p *platformProc) boot() {
	t := p.t
	t.Helper()
	p.proc = start(t, "a2a-platform", nil, bins.Platform, "up", "--data-dir", p.dataDir, "--http", p.httpAddr,
		"--nats-listen", p.natsAddr, "--lease", "3s", "--heartbeat-timeout", "4s", "--shutdown-grace", "2s", "--log-level", "debug")
	p.logs = append(p.logs, p.proc)
	p.proc.waitOutput(t, `"message":"platform ready"`)
	ready := p.proc.logLine("platform ready")
	p.httpAddr = strings.TrimPrefix(fmt.Sprint(ready["http"]), "http://")
	p.natsAddr = strings.TrimPrefix(fmt.Sprint(ready["nats"]), "nats://")
	token := strings.TrimSpace(meshtest.ReadFile(filepath.Join(p.dataDir, "owner.token")))
	p.Platform = meshtest.Remote(t, "http://"+p.httpAddr, token)
	p.Platform.DataDir = p.dataDir
}

// output is everything every start of the platform printed.
func (p *platformProc) output() string {
	var b strings.Builder
	for _, pr := range p.logs {
		b.WriteString(pr.out.String())
	}
	return b.String()
}

// loginLink runs `a2a-platform login --no-browser` and returns the link it
// printed.
func (p *platformProc) loginLink() string {
	t := p.t
	t.Helper()
	out, err := run(t, nil, bins.Platform, "login", "--no-browser", "--data-dir", p.dataDir, "--api-base", p.APIBase)
	if err != nil {
		t.Fatalf("a2a-platform login: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`http://\S+/login\?code=\S+`).FindString(out)
	if m == "" {
		t.Fatalf("a2a-platform login printed no link:\n%s", out)
	}
	return m
}

// startAdapter runs a2a-adapter with the command provider and returns its
// run-task endpoint.
func startAdapter(t *testing.T, script string) string {
	t.Helper()
	p := start(t, "a2a-adapter", []string{"HOME=" + t.TempDir()}, bins.Adapter, "--provider", "command",
		"--listen", "127.0.0.1:0", "--workdir", filepath.Join(t.TempDir(), "work"), "--kill-grace", "500ms", "--log-level", "debug",
		"--", script)
	p.waitOutput(t, "a2a-adapter listening on http://")
	m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(p.out.String())
	return m[1] + "/run-task"
}

// agentScript writes the agent the adapter runs for every task: progress on
// stderr, a Markdown report and a small PNG chart in $A2A_OUTPUT_DIR, the
// answer on stdout. A task that says "slow" works until it is canceled.
func agentScript(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sh")
	body := `#!/bin/sh
text=$(cat)
echo "progress: 10% reading the request" >&2
sleep 0.4
echo "progress: 50% writing the report" >&2
case "$text" in
*slow*)
	echo "progress: 60% thinking very slowly" >&2
	while :; do sleep 0.2; done ;;
esac
printf '# Report\n\nYou asked: %s\n\n- **first** finding\n- second finding\n' "$text" > "$A2A_OUTPUT_DIR/report.md"
echo 'iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGPgDr8ARwzEcQDlMxMhbUlptgAAAABJRU5ErkJggg==' | base64 -d > "$A2A_OUTPUT_DIR/chart.png"
sleep 0.4
echo "progress: 90% report written" >&2
echo "Done: $text"
`
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// machine is the user's machine: a home directory with its own runtime profile.
type machine struct {
	t    *testing.T
	home string
}

func newMachine(t *testing.T) *machine { return &machine{t: t, home: t.TempDir()} }

func (m *machine) env() []string { return []string{"HOME=" + m.home} }

// pair runs the pair command line the page's instructions gave, with the
// adapter's endpoint added (before the adapter's arguments, if any), and
// returns its output.
func (m *machine) pair(args []string, endpoint string) string {
	m.t.Helper()
	return m.pairWithCode("", args, endpoint)
}

// pairWithCode is pair with the one-time code, when given, on standard
// input, as the instructions give it.
func (m *machine) pairWithCode(code string, args []string, endpoint string) string {
	m.t.Helper()
	at := slices.Index(args, "--")
	if at < 0 {
		at = len(args)
	}
	args = slices.Concat(args[:at], []string{"--local-agent-endpoint", endpoint, "--device-name", "web-test-laptop"}, args[at:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.Runtime, args...)
	cmd.Env = append(os.Environ(), m.env()...)
	if code != "" {
		cmd.Stdin = strings.NewReader(code + "\n")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		m.t.Fatalf("a2a-runtime pair: %v\n%s", err, out)
	}
	return string(out)
}

// start runs `a2a-runtime start` and waits until it works.
func (m *machine) start() *proc {
	m.t.Helper()
	p := start(m.t, "a2a-runtime", m.env(), bins.Runtime, "start", "--log-level", "debug")
	p.waitOutput(m.t, `"message":"runtime started"`)
	return p
}

// profileToken reads the runtime token pairing stored, for the secret scans.
func (m *machine) profileToken() string {
	var f struct {
		Profiles map[string]struct {
			RuntimeToken string `json:"runtime_token"`
		} `json:"profiles"`
	}
	_ = json.Unmarshal([]byte(meshtest.ReadFile(filepath.Join(m.home, ".a2a", "runtime.json"))), &f)
	for _, p := range f.Profiles {
		return p.RuntimeToken
	}
	return ""
}

var errNoLine = errors.New("no such line")

// commandLine finds the line of text that starts with prefix and splits it
// into arguments (the instructions quote nothing).
func commandLine(text, prefix string) ([]string, error) {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, prefix) {
			return strings.Fields(line), nil
		}
	}
	return nil, errNoLine
}

// issueLoginLink asks the platform for a sign-in link as `a2a-platform login`
// does, optionally shortened to ttlSeconds.
func issueLoginLink(t *testing.T, p *meshtest.Platform, ttlSeconds int) (link string, expires time.Time) {
	t.Helper()
	var body any
	if ttlSeconds > 0 {
		body = map[string]any{"ttl_seconds": ttlSeconds}
	}
	var out struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	p.Send(t, meshtest.Request{Method: "POST", Path: "/web/login-links", Owner: true, JSON: body}).Expect(t, 201).Decode(t, &out)
	return out.URL, out.ExpiresAt
}

// signIn opens a fresh sign-in link and waits for the agents list.
func (b *browserT) signIn(p *meshtest.Platform) {
	b.t.Helper()
	link, _ := issueLoginLink(b.t, p, 0)
	b.open(link)
	b.waitText("main h1", "Agents")
}
