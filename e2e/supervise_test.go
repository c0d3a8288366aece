package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// adapterPidHost is a fake agent CLI that writes the pid of the adapter
// that runs it to path and answers "done". The adapter runs each host
// under a keeper of its own, so the adapter is the nearest ancestor whose
// command line names a provider.
func adapterPidHost(t *testing.T, path string) string {
	return script(t, `pid=$PPID
while [ "$pid" -gt 1 ] && ! ps -o args= -p "$pid" | grep -q -- '--provider'; do
	pid=$(ps -o ppid= -p "$pid" | tr -d ' ')
done
echo $pid > '`+path+`'
cat >/dev/null; echo done`)
}

// readPid waits until path holds a pid other than not, and returns it.
func readPid(t *testing.T, path string, not int) int {
	t.Helper()
	pid := 0
	meshtest.Eventually(t, waitStart, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0 && pid != not
	}, func() string { return "no new adapter pid in " + path })
	return pid
}

// One thing to run on the laptop: `a2a-runtime start --adapter` starts the
// adapter itself on the port given at start (not the one given at pairing),
// restarts it when it dies, and stops it when the runtime stops.
func TestSupervisedAdapter_StartedRestartedAndStoppedByTheRuntime(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.CreateAgent("supervised")
	m := l.newMachine()
	pairedAt := meshtest.FreeAddr(t)
	m.pair(p.Platform, agent.ID, "http://"+pairedAt+"/run-task")

	pidFile := filepath.Join(t.TempDir(), "adapter.pid")
	addr := meshtest.FreeAddr(t)
	rt := m.startRuntime("--adapter", "command", "--adapter-bin", bins.Adapter,
		"--local-agent-endpoint", "http://"+addr+"/run-task",
		"--", "--workdir", filepath.Join(t.TempDir(), "work"), "--", adapterPidHost(t, pidFile))
	waitOnline(t, p.Platform, agent.ID, m.profileFile().Profiles[m.profileFile().ActiveProfile].RuntimeID)

	first := waitEnded(t, p.Platform, p.CreateTask(agent.ID, "one").ID, mesh.StatusCompleted, waitStart)
	if !strings.Contains(string(first.Output), "done") {
		t.Fatalf("output %s, want the host's answer", first.Output)
	}
	pid := readPid(t, pidFile, 0)
	if c, err := net.Dial("tcp", pairedAt); err == nil {
		c.Close()
		t.Errorf("something listens on the port given at pairing (%s); the adapter should be on %s", pairedAt, addr)
	}

	// The adapter crashes: the runtime starts it again on the same port.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	rt.waitOutput(t, "local adapter exited; starting it again", waitStart)
	second := waitEnded(t, p.Platform, p.CreateTask(agent.ID, "two").ID, mesh.StatusCompleted, waitLost)
	if second.Status != mesh.StatusCompleted {
		t.Fatalf("run after the restart: %s", second.Status)
	}
	pid2 := readPid(t, pidFile, pid)

	// Stopping the runtime stops its adapter.
	rt.signal(t, syscall.SIGTERM)
	if code := rt.waitExit(t, waitStart); code != 0 {
		t.Fatalf("runtime exited %d; output:\n%s", code, rt.shown(4000))
	}
	waitGone(t, []int{pid2}, waitStart)
}

// A port already taken stops `start --adapter` with a hint naming the flag
// that changes it, instead of a bare "address already in use".
func TestSupervisedAdapter_BusyPortGivesAHint(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.CreateAgent("busy port")
	m := l.newMachine()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	m.pair(p.Platform, agent.ID, "http://"+taken.Addr().String()+"/run-task")

	rt := m.spawnRuntime("--adapter", "command", "--adapter-bin", bins.Adapter, "--", "--", "true")
	if code := rt.waitExit(t, waitStart); code == 0 {
		t.Fatalf("runtime started with its adapter port taken; output:\n%s", rt.shown(4000))
	}
	out := rt.output()
	for _, want := range []string{taken.Addr().String(), "in use", "--local-agent-endpoint"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, rt.shown(4000))
		}
	}
}

// One thing to run on the laptop, chosen once: `a2a-runtime pair CODE
// --provider …` (the name --adapter works too, as on start) keeps the adapter
// it supervises in the profile, with its program and arguments, so a plain
// `a2a-runtime start` starts, restarts and stops it without the flags.
func TestSupervisedAdapter_ChosenAtPairingIsStartedByAPlainStart(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.CreateAgent("supervised from pairing")
	m := l.newMachine()
	pidFile := filepath.Join(t.TempDir(), "adapter.pid")
	addr := meshtest.FreeAddr(t)
	prof := m.pair(p.Platform, agent.ID, "http://"+addr+"/run-task",
		"--provider", "command", "--adapter-bin", bins.Adapter,
		"--", "--workdir", filepath.Join(t.TempDir(), "work"), "--", adapterPidHost(t, pidFile))

	if st := m.cli("status"); !strings.Contains(st.stdout, "a2a-adapter --provider command") {
		t.Errorf("status does not say which adapter start runs: %s", st)
	}
	rt := m.startRuntime()
	waitOnline(t, p.Platform, agent.ID, prof.RuntimeID)
	run := waitEnded(t, p.Platform, p.CreateTask(agent.ID, "one").ID, mesh.StatusCompleted, waitStart)
	if !strings.Contains(string(run.Output), "done") {
		t.Fatalf("output %s, want the host's answer", run.Output)
	}
	pid := readPid(t, pidFile, 0)

	rt.signal(t, syscall.SIGTERM)
	if code := rt.waitExit(t, waitStart); code != 0 {
		t.Fatalf("runtime exited %d; output:\n%s", code, rt.shown(4000))
	}
	waitGone(t, []int{pid}, waitStart)

	// --adapter none on start runs the adapter the profile names no more.
	rt = m.startRuntime("--adapter", "none")
	if rt.logLine("local adapter started") != nil {
		t.Errorf("start --adapter none started an adapter:\n%s", rt.shown(4000))
	}
}

// A runtime run as a service does not have the user's shell environment,
// where hosts read their credentials (OPENCLAW_GATEWAY_TOKEN,
// ANTHROPIC_API_KEY…): the adapter it runs gets the variables of
// ~/.a2a/adapter.env (only the user may read it), so a plain `start` gives
// the host what it needs. A file others may read is refused at start.
func TestSupervisedAdapter_GetsTheVariablesOfTheAdapterEnvFile(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.CreateAgent("supervised with an env file")
	m := l.newMachine()
	addr := meshtest.FreeAddr(t)
	prof := m.pair(p.Platform, agent.ID, "http://"+addr+"/run-task",
		"--adapter", "command", "--adapter-bin", bins.Adapter,
		"--", "--workdir", filepath.Join(t.TempDir(), "work"), "--", script(t, `cat >/dev/null; echo "greeting: $AGENT_GREETING"`))
	envFile := filepath.Join(m.Home, ".a2a", "adapter.env")
	if err := os.WriteFile(envFile, []byte("# for the host\nAGENT_GREETING=hello from the env file\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	refused := m.spawnRuntime()
	if code := refused.waitExit(t, waitStart); code == 0 || !strings.Contains(refused.output(), "chmod 600") {
		t.Fatalf("start with an env file others may read exited %d:\n%s", code, refused.shown(3000))
	}

	if err := os.Chmod(envFile, 0o600); err != nil {
		t.Fatal(err)
	}
	m.startRuntime()
	waitOnline(t, p.Platform, agent.ID, prof.RuntimeID)
	run := waitEnded(t, p.Platform, p.CreateTask(agent.ID, "hi").ID, mesh.StatusCompleted, waitStart)
	if !strings.Contains(string(run.Output), "greeting: hello from the env file") {
		t.Fatalf("output %s, want the variable of the env file", run.Output)
	}
}
