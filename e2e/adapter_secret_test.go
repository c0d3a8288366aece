package e2e

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// The adapter `a2a-runtime start --adapter` runs takes work from that
// runtime only. The runtime makes a secret at each start of the adapter,
// hands it over in a file only the user may read (never on the command
// line), and sends it with every request; a program posting to the adapter's
// port without it (another user on the machine, a web page that rebound a
// name of its own to loopback) is refused. The secret shows in no command
// line, log, ledger or host environment.
func TestSupervisedAdapter_TakesWorkOnlyFromItsRuntime(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.CreateAgent("supervised with a secret")
	m := l.newMachine()
	addr := meshtest.FreeAddr(t)
	prof := m.pair(p.Platform, agent.ID, "http://"+addr+"/run-task")

	dir := t.TempDir()
	pidFile, envFile := filepath.Join(dir, "adapter.pid"), filepath.Join(dir, "host.env")
	host := script(t, `pid=$PPID
while [ "$pid" -gt 1 ] && ! ps -o args= -p "$pid" | grep -q -- '--provider'; do
	pid=$(ps -o ppid= -p "$pid" | tr -d ' ')
done
echo $pid > '`+pidFile+`'
env > '`+envFile+`'
cat >/dev/null; echo done`)
	rt := m.startRuntime("--adapter", "command", "--adapter-bin", bins.Adapter,
		"--local-agent-endpoint", "http://"+addr+"/run-task",
		"--", "--workdir", filepath.Join(dir, "work"), "--", host)
	waitOnline(t, p.Platform, agent.ID, prof.RuntimeID)

	run := waitEnded(t, p.Platform, p.CreateTask(agent.ID, "one").ID, mesh.StatusCompleted, waitStart)
	if !strings.Contains(string(run.Output), "done") {
		t.Fatalf("output %s, want the host's answer", run.Output)
	}

	// The adapter's command line names the file, never the secret.
	pid := readPid(t, pidFile, 0)
	args, err := exec.Command("ps", "-o", "args=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(args), "--auth-token-file ")
	if !ok {
		t.Fatalf("the adapter was started without --auth-token-file: %s", args)
	}
	tokenFile := strings.Fields(rest)[0]
	info, err := os.Stat(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", info.Mode().Perm())
	}
	secret := strings.TrimSpace(meshtest.ReadFile(tokenFile))
	if len(secret) < 32 {
		t.Fatalf("secret of %d characters, want a random one of 32 or more", len(secret))
	}

	for name, header := range map[string]http.Header{
		"no secret":    {},
		"wrong secret": {"Authorization": {"Bearer " + strings.Repeat("0", len(secret))}},
	} {
		status, body := postTask(t, "http://"+addr, "", header)
		if status != http.StatusUnauthorized || !strings.Contains(body, `"success":false`) {
			t.Errorf("%s: %d %s, want 401 with a JSON failure", name, status, body)
		}
	}
	status, body := postTask(t, "http://"+addr, "rebind.attacker.example:"+addr[strings.LastIndex(addr, ":")+1:],
		http.Header{"Authorization": {"Bearer " + secret}})
	if status != http.StatusForbidden || !strings.Contains(body, `"success":false`) {
		t.Errorf("foreign Host with the secret: %d %s, want 403 with a JSON failure", status, body)
	}
	if status, body := postTask(t, "http://"+addr, "", http.Header{"Authorization": {"Bearer " + secret}}); status != http.StatusOK {
		t.Errorf("with the secret: %d %s, want 200", status, body)
	}

	for where, text := range map[string]string{
		"the adapter's command line": string(args),
		"the host's environment":     meshtest.ReadFile(envFile),
		"the runtime's output":       rt.output(),
		"the ledger":                 meshtest.ReadFile(m.ledgerPath(agent.ID)),
	} {
		if text == "" {
			t.Errorf("%s is empty", where)
		}
		if strings.Contains(text, secret) {
			t.Errorf("the secret shows in %s", where)
		}
	}
}

// An adapter the user runs alone (`start` without --adapter) is given the
// runtime's secret by the user: the same file to both programs.
func TestSelfRunAdapter_TakesWorkFromTheRuntimeGivenTheSameTokenFile(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	tokenFile := filepath.Join(t.TempDir(), "adapter-token")
	const secret = "shared-adapter-secret-5b9e0c7a"
	if err := os.WriteFile(tokenFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := l.start("adapter", []string{"HOME=" + t.TempDir()}, bins.Adapter, "--provider", "echo",
		"--listen", "127.0.0.1:0", "--workdir", filepath.Join(t.TempDir(), "work"), "--auth-token-file", tokenFile)
	a.waitOutput(t, "a2a-adapter listening on http://", waitStart)
	base := strings.Fields(strings.SplitN(a.output(), "listening on ", 2)[1])[0]

	c := l.connect(p, base+"/run-task", "--adapter-token-file", tokenFile)
	run := waitEnded(t, p.Platform, c.task("hello").ID, mesh.StatusCompleted, waitStart)
	if !strings.Contains(string(run.Output), "hello") {
		t.Fatalf("output %s, want the echo", run.Output)
	}
	if status, _ := postTask(t, base, "", http.Header{}); status != http.StatusUnauthorized {
		t.Errorf("a post without the secret: %d, want 401", status)
	}
	for where, text := range map[string]string{"the runtime's output": c.rt.output(), "the adapter's output": a.output()} {
		if strings.Contains(text, secret) {
			t.Errorf("the secret shows in %s", where)
		}
	}
}

// postTask posts a task to the adapter at base, with Host host unless it
// is empty, and returns the status and the body.
func postTask(t *testing.T, base, host string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/run-task",
		strings.NewReader(`{"task_run_id":"not-from-the-runtime","conversation_id":"c","input":{"text":"hi"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	if host != "" {
		req.Host = host
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
	return resp.StatusCode, string(b)
}
