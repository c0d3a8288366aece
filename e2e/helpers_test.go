package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// Timings of the platforms the suite starts: short, so that offline
// detection and lease expiry happen within seconds.
const (
	testLease            = 2 * time.Second
	testHeartbeatTimeout = 3 * time.Second
	// waitStart bounds a process start, a connection or a short task.
	waitStart = 20 * time.Second
	// waitLost bounds what the platform does after a runtime is lost: the
	// lease or heartbeat timeout, the reaper, and a margin for a busy machine.
	waitLost = testLease + testHeartbeatTimeout + 10*time.Second
)

// lab is everything one test started: processes, whose output is kept for
// the secret scans and shown when the test fails, and command outputs.
type lab struct {
	t     *testing.T
	mu    sync.Mutex
	procs []*proc
	texts map[string]string
	seq   map[string]int
	// secrets are the credentials the test handed out; the output shown
	// when the test fails has them masked.
	secrets meshtest.Secrets
}

func newLab(t *testing.T) *lab {
	l := &lab{t: t, texts: map[string]string{}, seq: map[string]int{}}
	// Cleanups run last-registered first: the test's temporary directories,
	// whose removal is registered by the first TempDir, must outlast the
	// processes writing in them.
	t.TempDir()
	t.Cleanup(l.close)
	return l
}

// close kills what is still running, newest first, and shows every
// process's output when the test failed.
func (l *lab) close() {
	l.mu.Lock()
	procs := slices.Clone(l.procs)
	l.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].kill()
	}
	if !l.t.Failed() {
		return
	}
	for _, p := range procs {
		l.t.Logf("---- output of %s (%s) ----\n%s", p.name, p.exitText(), tail(withoutPolls(l.secrets.Mask(p.output())), 12000))
	}
}

// withoutPolls drops the platform's log lines of GET requests, most of them
// the test's own polling, which would bury everything else.
func withoutPolls(out string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		if strings.Contains(line, `"method":"GET"`) && strings.Contains(line, `"message":"http request"`) {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// name returns base, or base#n for the n-th process of that name.
func (l *lab) name(base string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq[base]++
	if n := l.seq[base]; n > 1 {
		return fmt.Sprintf("%s#%d", base, n)
	}
	return base
}

// keep records a text for the secret scans.
func (l *lab) keep(name, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.texts[name] += text
}

// outputs returns every process's output and every kept text, by name.
func (l *lab) outputs() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.procs)+len(l.texts))
	for name, text := range l.texts {
		out[name] = text
	}
	for _, p := range l.procs {
		out["output of "+p.name] = p.output()
	}
	return out
}

// proc is a program started by a test; it is killed when the test ends.
type proc struct {
	l      *lab
	name   string
	cmd    *exec.Cmd
	stdout meshtest.Logs
	stderr meshtest.Logs
	done   chan struct{}
}

// start runs bin with args and extra environment (added to the test's own).
func (l *lab) start(name string, env []string, bin string, args ...string) *proc {
	l.t.Helper()
	p := &proc{l: l, name: l.name(name), done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		l.t.Fatalf("start %s: %v", p.name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.mu.Unlock()
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) output() string { return p.stdout.String() + p.stderr.String() }

// shown is the end of the output, up to n bytes, with the test's
// credentials masked, for failure messages.
func (p *proc) shown(n int) string { return tail(p.l.secrets.Mask(p.output()), n) }

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) exitText() string {
	if p.running() {
		return "running"
	}
	return p.cmd.ProcessState.String()
}

// kill sends SIGKILL (kill -9: no shutdown code runs) and waits until the
// process is gone.
func (p *proc) kill() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// signal delivers sig to the process.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s to %s: %v", sig, p.name, err)
	}
}

// waitExit waits for the process to exit and returns its exit code.
func (p *proc) waitExit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("%s still running after %s; output:\n%s", p.name, timeout, p.shown(4000))
	}
	return -1
}

// waitOutput waits until the process has printed text, failing the test if
// it exits or the deadline passes first.
func (p *proc) waitOutput(t *testing.T, text string, timeout time.Duration) {
	t.Helper()
	meshtest.Eventually(t, timeout, func() bool {
		if strings.Contains(p.output(), text) {
			return true
		}
		if !p.running() {
			t.Fatalf("%s exited (%s) before printing %q; output:\n%s", p.name, p.exitText(), text, p.shown(4000))
		}
		return false
	}, func() string {
		return fmt.Sprintf("%s never printed %q; output:\n%s", p.name, text, p.shown(4000))
	})
}

// logLine returns the first JSON log line whose message is msg.
func (p *proc) logLine(msg string) map[string]any { return meshtest.LogLine(p.output(), msg) }

// result is a finished command.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs a command to its end; its output is kept for the secret scans.
func (l *lab) run(name string, env []string, bin string, args ...string) result {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		l.t.Fatalf("run %s: %v", name, err)
	}
	r := result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	l.keep("output of "+l.name(name), r.stdout+r.stderr)
	return r
}

// transports are the two ways a runtime reaches the platform.
var transports = []string{"nats", "http"}

// eachTransport runs test once per transport, as parallel subtests, each
// with its own lab.
func eachTransport(t *testing.T, test func(t *testing.T, l *lab, transport string)) {
	t.Parallel()
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			test(t, newLab(t), transport)
		})
	}
}

// ---- platform ----

// platformOptions tune a platform process; zero values take the suite's
// short timings.
type platformOptions struct {
	lease            time.Duration
	heartbeatTimeout time.Duration
	maxArtifactBytes int64
	webSocket        bool
	// allowPrivateWebhooks lets webhooks and A2A push notifications reach
	// the test's loopback receivers.
	allowPrivateWebhooks bool
	// downloadsDir is what the platform offers at /install.sh.
	downloadsDir string
	// env is added to the process's environment.
	env []string
}

// platform is `a2a-platform up` running as its own process. Its HTTP calls
// come from meshtest; they fail the test that created the platform, so
// subtests use forTest.
type platform struct {
	*meshtest.Platform
	l       *lab
	opts    platformOptions
	dataDir string
	// httpAddr, natsAddr and wsAddr are the listen addresses: port 0 at the
	// first start, the ports chosen then at every restart.
	httpAddr, natsAddr, wsAddr string
	NATSURL, WSURL             string
	proc                       *proc
}

func (l *lab) startPlatform(o platformOptions) *platform {
	l.t.Helper()
	if o.lease == 0 {
		o.lease = testLease
	}
	if o.heartbeatTimeout == 0 {
		o.heartbeatTimeout = testHeartbeatTimeout
	}
	// Reserved ports, not ephemeral ones: a restart binds them again, and an
	// ephemeral port may meanwhile be taken by any outbound connection.
	p := &platform{l: l, opts: o, dataDir: l.t.TempDir(), httpAddr: meshtest.FreeAddr(l.t), natsAddr: meshtest.FreeAddr(l.t)}
	if o.webSocket {
		p.wsAddr = meshtest.FreeAddr(l.t)
	}
	p.boot()
	return p
}

// boot starts the process and waits until the API is ready.
func (p *platform) boot() {
	t := p.l.t
	t.Helper()
	args := []string{"up", "--data-dir", p.dataDir, "--http", p.httpAddr, "--nats-listen", p.natsAddr,
		"--lease", p.opts.lease.String(), "--heartbeat-timeout", p.opts.heartbeatTimeout.String(),
		"--shutdown-grace", "2s", "--log-level", "debug"}
	if p.wsAddr != "" {
		args = append(args, "--nats-ws-listen", p.wsAddr)
	}
	if p.opts.allowPrivateWebhooks {
		args = append(args, "--allow-private-webhooks")
	}
	if p.opts.downloadsDir != "" {
		args = append(args, "--downloads-dir", p.opts.downloadsDir)
	}
	if p.opts.maxArtifactBytes > 0 {
		args = append(args, "--max-artifact-bytes", strconv.FormatInt(p.opts.maxArtifactBytes, 10))
	}
	p.proc = p.l.start("platform", p.opts.env, bins.Platform, args...)
	p.proc.waitOutput(t, `"message":"platform ready"`, waitStart)
	ready := p.proc.logLine("platform ready")
	p.httpAddr = strings.TrimPrefix(fmt.Sprint(ready["http"]), "http://")
	p.NATSURL = fmt.Sprint(ready["nats"])
	p.natsAddr = strings.TrimPrefix(p.NATSURL, "nats://")
	if p.wsAddr != "" {
		p.WSURL = fmt.Sprint(ready["websocket"])
		p.wsAddr = strings.TrimPrefix(p.WSURL, "ws://")
	}
	token := strings.TrimSpace(meshtest.ReadFile(filepath.Join(p.dataDir, "owner.token")))
	if token == "" {
		t.Fatalf("no owner credential in %s", p.dataDir)
	}
	p.l.secrets.Add(token)
	p.Platform = meshtest.Remote(t, "http://"+p.httpAddr, token)
	meshtest.Eventually(t, waitStart, func() bool {
		resp, err := http.Get(p.APIBase + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { return "the platform never became ready:\n" + p.proc.shown(4000) })
}

// forTest returns the platform's HTTP calls bound to t (a subtest).
func (p *platform) forTest(t *testing.T) *meshtest.Platform {
	r := meshtest.Remote(t, p.APIBase, p.OwnerToken)
	r.DataDir = p.dataDir
	return r
}

// stop stops the platform as an operator would, with SIGTERM, and waits
// until it has exited.
func (p *platform) stop() {
	t := p.l.t
	t.Helper()
	p.proc.signal(t, syscall.SIGTERM)
	if code := p.proc.waitExit(t, waitStart); code != 0 {
		t.Fatalf("the platform exited %d on SIGTERM", code)
	}
}

// start starts a stopped platform again on the same data dir and ports.
func (p *platform) start() {
	p.l.t.Helper()
	if p.proc.running() {
		p.l.t.Fatal("the platform is still running")
	}
	p.boot()
}

// createTask creates a run from a full request body and returns it.
func createTask(t *testing.T, p *meshtest.Platform, body map[string]any) mesh.TaskRun {
	t.Helper()
	return p.CreateTaskWith(t, body).Expect(t, http.StatusCreated).Run(t)
}

// rawTask returns a run exactly as GET /task-runs/{id} serves it.
func rawTask(t *testing.T, p *meshtest.Platform, id string) []byte {
	t.Helper()
	return p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs/" + id, Owner: true}).Expect(t, http.StatusOK).Body
}

// cancelTask cancels a run on the platform.
func cancelTask(t *testing.T, p *meshtest.Platform, id string) {
	t.Helper()
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + id + "/cancel", Owner: true, JSON: map[string]any{"reason": "no longer needed"}}).
		Expect(t, http.StatusOK)
}

// waitStatus waits until the run is in status and returns it.
func waitStatus(t *testing.T, p *meshtest.Platform, id string, status mesh.Status, timeout time.Duration) mesh.TaskRun {
	t.Helper()
	return p.WaitTask(id, timeout, meshtest.StatusIs(status))
}

// waitEnded waits until the run reached a final status and fails the test
// unless it is want.
func waitEnded(t *testing.T, p *meshtest.Platform, id string, want mesh.Status, timeout time.Duration) mesh.TaskRun {
	t.Helper()
	run := p.WaitTask(id, timeout, func(r mesh.TaskRun) bool { return r.Status.Terminal() })
	if run.Status != want {
		t.Fatalf("run %s ended %s, want %s; error %+v; output %s", id, run.Status, want, run.Error, run.Output)
	}
	return run
}

// never fails the test if cond holds at any time during d. It is the one
// bounded wait of the suite: it shows that something does not happen.
func never(t *testing.T, d time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			t.Fatal(describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitOnline waits until the platform lists the runtime as online.
func waitOnline(t *testing.T, p *meshtest.Platform, agentID, runtimeID string) mesh.RuntimeView {
	t.Helper()
	return waitPresence(t, p, agentID, runtimeID, mesh.PresenceOnline, waitStart)
}

func waitPresence(t *testing.T, p *meshtest.Platform, agentID, runtimeID string, want mesh.Presence, timeout time.Duration) mesh.RuntimeView {
	t.Helper()
	var v mesh.RuntimeView
	meshtest.Eventually(t, timeout, func() bool {
		v = p.RuntimeView(t, agentID, runtimeID)
		return v.Status == want
	}, func() string { return fmt.Sprintf("runtime %s is %s, want %s", runtimeID, v.Status, want) })
	return v
}

// events returns every event GET /events serves for query (with
// since=1h): it reads until an event it causes itself (an agent created, or
// the filtered agent updated) arrives, so every earlier event is included.
func events(t *testing.T, p *meshtest.Platform, query url.Values) []meshtest.Event {
	t.Helper()
	q := url.Values{"since": {"1h"}}
	for k, v := range query {
		q[k] = v
	}
	s := p.StreamEvents(t, q)
	defer s.Close()
	var stop func(meshtest.Event) bool
	if agentID := q.Get("agent_id"); agentID != "" {
		desc := "end of scan " + mesh.NewID()
		p.Do(http.MethodPatch, "/agent-accounts/"+agentID, map[string]any{"description": desc}, nil)
		stop = func(ev meshtest.Event) bool {
			return ev.Type == mesh.EventAgentUpdated && strings.Contains(string(ev.Data), desc)
		}
	} else {
		marker := p.CreateAgent("end-of-scan")
		stop = meshtest.TypeIs(mesh.EventAgentCreated, marker.ID)
	}
	return s.Until(t, waitStart, stop)
}

// countEvents counts events of typ (full type name) about subject ("" any).
func countEvents(evs []meshtest.Event, typ, subject string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ && (subject == "" || ev.Subject == subject) {
			n++
		}
	}
	return n
}

// ---- adapter ----

// adapterProc is a2a-adapter running as its own process.
type adapterProc struct {
	*proc
	// Endpoint is its run-task URL.
	Endpoint string
	// Base is its root URL (GET /health lives there).
	Base string
	// Workdir holds the conversations' working directories.
	Workdir string
}

// startAdapter runs a2a-adapter with a provider on a free loopback port;
// argv is the command of the command provider.
func (l *lab) startAdapter(provider string, argv ...string) *adapterProc {
	l.t.Helper()
	return l.startAdapterEnv(nil, provider, argv...)
}

// startAdapterEnv is startAdapter with extra environment.
func (l *lab) startAdapterEnv(env []string, provider string, argv ...string) *adapterProc {
	l.t.Helper()
	workdir := filepath.Join(l.t.TempDir(), "work")
	args := []string{"--provider", provider, "--listen", "127.0.0.1:0", "--workdir", workdir,
		"--kill-grace", "500ms", "--log-level", "debug"}
	if len(argv) > 0 {
		args = append(append(args, "--"), argv...)
	}
	p := l.start("adapter", append([]string{"HOME=" + l.t.TempDir()}, env...), bins.Adapter, args...)
	p.waitOutput(l.t, "a2a-adapter listening on http://", waitStart)
	m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(p.output())
	return &adapterProc{proc: p, Base: m[1], Endpoint: m[1] + "/run-task", Workdir: workdir}
}

// script writes a fake agent CLI: a sh script run by the command provider
// for every task (task text on stdin, the task in A2A_ variables).
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// untilFile is sh that waits until path exists: a fake agent working until
// the test lets it finish. It gives up once the test's directory is gone, so
// a test that fails before letting it finish leaves no process behind.
func untilFile(path string) string {
	return "while [ ! -e '" + path + "' ]; do [ -d '" + filepath.Dir(path) + "' ] || exit 1; sleep 0.02; done"
}

// fakeAdapter is an adapter written in the test, for the answers
// a2a-adapter never gives.
type fakeAdapter struct {
	srv      *httptest.Server
	Endpoint string
	quit     chan struct{}
	mu       sync.Mutex
	requests []map[string]any
	aborted  []string
}

// newFakeAdapter serves GET /health and POST /run-task on loopback; reply
// answers each task. Its ctx ends when the runtime drops the request.
func newFakeAdapter(t *testing.T, reply func(ctx context.Context, w http.ResponseWriter, task map[string]any)) *fakeAdapter {
	t.Helper()
	f := &fakeAdapter{quit: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"provider":"fake"}`)
	})
	mux.HandleFunc("POST /run-task", func(w http.ResponseWriter, r *http.Request) {
		var task map[string]any
		if err := json.NewDecoder(r.Body).Decode(&task); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, task)
		f.mu.Unlock()
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-f.quit:
				cancel()
			case <-ctx.Done():
			}
		}()
		reply(ctx, w, task)
		if r.Context().Err() != nil {
			f.mu.Lock()
			f.aborted = append(f.aborted, fmt.Sprint(task["task_run_id"]))
			f.mu.Unlock()
		}
	})
	f.srv = httptest.NewServer(mux)
	f.Endpoint = f.srv.URL + "/run-task"
	t.Cleanup(func() {
		close(f.quit)
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

// wasAborted reports whether the runtime dropped the request of a run.
func (f *fakeAdapter) wasAborted(runID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.aborted, runID)
}

// ---- runtime ----

// machine is one user's machine: a home directory with its own profile
// file and ledger, where a2a-runtime runs.
type machine struct {
	l    *lab
	Home string
}

func (l *lab) newMachine() *machine {
	return &machine{l: l, Home: l.t.TempDir()}
}

func (m *machine) env() []string { return []string{"HOME=" + m.Home} }

// profilePath is ~/.a2a/runtime.json.
func (m *machine) profilePath() string { return filepath.Join(m.Home, ".a2a", "runtime.json") }

// cli runs one a2a-runtime command on the machine.
func (m *machine) cli(args ...string) result {
	m.l.t.Helper()
	name := "a2a-runtime"
	if len(args) > 0 {
		name += " " + args[0]
	}
	return m.l.run(name, m.env(), bins.Runtime, args...)
}

// paired is what pairing left in the profile file.
type paired struct {
	AgentID, RuntimeID, Token, Code string
}

// Name is the profile's name, "{agent_id}/{runtime_id}".
func (p paired) Name() string { return p.AgentID + "/" + p.RuntimeID }

// pair issues a pairing code for agentID and runs `a2a-runtime pair` with
// it against the platform, the adapter at endpoint, and extra flags.
func (m *machine) pair(p *meshtest.Platform, agentID, endpoint string, extra ...string) paired {
	t := m.l.t
	t.Helper()
	code := p.PairingCode(agentID)
	m.l.secrets.Add(code)
	args := append([]string{"pair", code, "--api-base", p.APIBase, "--local-agent-endpoint", endpoint}, extra...)
	res := m.cli(args...)
	if res.code != 0 {
		t.Fatalf("a2a-runtime pair failed: %s", res)
	}
	f := m.profileFile()
	prof, ok := f.Profiles[f.ActiveProfile]
	if !ok || prof.AgentID != agentID {
		t.Fatalf("after pairing agent %s the active profile is %q of %v", agentID, f.ActiveProfile, f.names())
	}
	m.l.secrets.Add(prof.RuntimeToken)
	return paired{AgentID: prof.AgentID, RuntimeID: prof.RuntimeID, Token: prof.RuntimeToken, Code: code}
}

// profileFile is runtime.json as a2a-runtime writes it.
type profileFile struct {
	ActiveProfile string                  `json:"active_profile"`
	Profiles      map[string]profileEntry `json:"profiles"`
}

type profileEntry struct {
	AgentID         string    `json:"agent_id"`
	RuntimeID       string    `json:"runtime_id"`
	RuntimeToken    string    `json:"runtime_token"`
	APIBase         string    `json:"api_base"`
	LastHeartbeatAt time.Time `json:"last_heartbeat_at"`
	NATS            struct {
		URL       string `json:"url"`
		Fallbacks []struct {
			Region string `json:"region"`
			URL    string `json:"url"`
		} `json:"fallbacks"`
	} `json:"nats"`
}

// names lists the profiles by name, for messages: a profile holds a runtime
// token, which has no place in the test's output.
func (f profileFile) names() []string {
	return slices.Sorted(maps.Keys(f.Profiles))
}

func (m *machine) profileFile() profileFile {
	m.l.t.Helper()
	var f profileFile
	if err := json.Unmarshal([]byte(meshtest.ReadFile(m.profilePath())), &f); err != nil {
		m.l.t.Fatalf("read %s: %v", m.profilePath(), err)
	}
	return f
}

// editProfileFile rewrites runtime.json through edit, keeping its mode.
func (m *machine) editProfileFile(edit func(map[string]any)) {
	t := m.l.t
	t.Helper()
	var f map[string]any
	if err := json.Unmarshal([]byte(meshtest.ReadFile(m.profilePath())), &f); err != nil {
		t.Fatal(err)
	}
	edit(f)
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.profilePath(), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// startRuntime runs `a2a-runtime start` with args and waits until it works.
func (m *machine) startRuntime(args ...string) *proc {
	m.l.t.Helper()
	rt := m.spawnRuntime(args...)
	rt.waitOutput(m.l.t, `"message":"runtime started"`, waitStart)
	return rt
}

// spawnRuntime runs `a2a-runtime start` with args without waiting.
func (m *machine) spawnRuntime(args ...string) *proc {
	return m.l.start("a2a-runtime start", m.env(), bins.Runtime, append([]string{"start", "--log-level", "debug"}, args...)...)
}

// ledgerEntry is one line of the execution ledger.
type ledgerEntry struct {
	TS        time.Time       `json:"ts"`
	Event     string          `json:"event"`
	AgentID   string          `json:"agent_id"`
	RuntimeID string          `json:"runtime_id"`
	TaskRunID string          `json:"task_run_id"`
	Attempt   int             `json:"attempt"`
	ErrorCode string          `json:"error_code"`
	Message   string          `json:"message"`
	Report    json.RawMessage `json:"report"`
}

// ledgerPath is ~/.a2a/logs/<agent_id>/execution-ledger.jsonl.
func (m *machine) ledgerPath(agentID string) string {
	return filepath.Join(m.Home, ".a2a", "logs", agentID, "execution-ledger.jsonl")
}

// ledger reads the agent's execution ledger.
func (m *machine) ledger(agentID string) []ledgerEntry {
	t := m.l.t
	t.Helper()
	var out []ledgerEntry
	for i, line := range strings.Split(strings.TrimSpace(meshtest.ReadFile(m.ledgerPath(agentID))), "\n") {
		if line == "" {
			continue
		}
		var e ledgerEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("ledger line %d is not JSON: %v: %s", i+1, err, line)
		}
		out = append(out, e)
	}
	return out
}

// ledgerEvents lists the events of the ledger about one run ("" for the
// runtime's own events), in order.
func ledgerEvents(entries []ledgerEntry, runID string) []string {
	var out []string
	for _, e := range entries {
		if e.TaskRunID == runID {
			out = append(out, e.Event)
		}
	}
	return out
}

// waitLedger waits until the ledger has an entry matching match.
func (m *machine) waitLedger(agentID string, timeout time.Duration, match func(ledgerEntry) bool) ledgerEntry {
	t := m.l.t
	t.Helper()
	var found ledgerEntry
	meshtest.Eventually(t, timeout, func() bool {
		for _, e := range m.ledger(agentID) {
			if match(e) {
				found = e
				return true
			}
		}
		return false
	}, func() string { return "no matching ledger entry in:\n" + meshtest.ReadFile(m.ledgerPath(agentID)) })
	return found
}

// connected is an agent whose runtime runs and is online.
type connected struct {
	p     *platform
	m     *machine
	agent mesh.Agent
	paired
	rt *proc
}

// connect creates an agent, pairs a new machine with it for the adapter at
// endpoint, starts the runtime with startArgs and waits until it is online.
func (l *lab) connect(p *platform, endpoint string, startArgs ...string) *connected {
	l.t.Helper()
	c := &connected{p: p, m: l.newMachine(), agent: p.CreateAgent("e2e agent")}
	c.paired = c.m.pair(p.Platform, c.agent.ID, endpoint)
	c.rt = c.m.startRuntime(startArgs...)
	waitOnline(l.t, p.Platform, c.AgentID, c.RuntimeID)
	return c
}

// task creates a task with input text for the connected agent.
func (c *connected) task(text string) mesh.TaskRun {
	c.m.l.t.Helper()
	return c.p.CreateTask(c.AgentID, text)
}

// ---- processes and sockets ----

// alive reports whether a process is still running: it exists (kill -0)
// and has not exited. An exited process waits as a zombie until its parent
// reaps it; an orphan's new parent, init, may take a while to do so.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat := meshtest.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// The state follows the command name, which is in parentheses.
	if i := strings.LastIndexByte(stat, ')'); i >= 0 && len(stat) > i+2 {
		return stat[i+2] != 'Z'
	}
	return stat != ""
}

// readPids waits until a script has written at least n pids to path.
func readPids(t *testing.T, path string, n int) []int {
	t.Helper()
	var pids []int
	meshtest.Eventually(t, waitStart, func() bool {
		pids = pids[:0]
		for _, f := range strings.Fields(meshtest.ReadFile(path)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return len(pids) >= n
	}, func() string { return fmt.Sprintf("%s holds %d pids, want %d", path, len(pids), n) })
	return pids
}

// waitFile waits until a file exists (a fake agent CLI wrote it).
func waitFile(t *testing.T, path string) {
	t.Helper()
	meshtest.Eventually(t, waitStart, func() bool {
		_, err := os.Stat(path)
		return err == nil
	}, func() string { return path + " was never written" })
}

// touch creates an empty file (the signal a fake agent CLI waits for).
func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func removeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// waitGone waits until none of the processes exists.
func waitGone(t *testing.T, pids []int, timeout time.Duration) {
	t.Helper()
	meshtest.Eventually(t, timeout, func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("host processes %v still running", pids) })
}

// tcpSocket is one line of /proc/<pid>/net/tcp{,6}.
type tcpSocket struct {
	local string
	state string // hex, "0A" is LISTEN, "01" ESTABLISHED
	inode string
}

// socketsOf returns the TCP sockets the process holds open: the socket
// inodes of /proc/<pid>/fd matched against /proc/<pid>/net/tcp and tcp6.
func socketsOf(t *testing.T, pid int) []tcpSocket {
	t.Helper()
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatalf("read %s: %v", fdDir, err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	var out []tcpSocket
	for _, table := range []string{"tcp", "tcp6"} {
		lines := strings.Split(meshtest.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table)), "\n")
		for _, line := range lines[min(1, len(lines)):] {
			f := strings.Fields(line)
			if len(f) < 10 || !inodes[f[9]] {
				continue
			}
			out = append(out, tcpSocket{local: f[1], state: f[3], inode: f[9]})
		}
	}
	return out
}

func listening(socks []tcpSocket) []tcpSocket {
	var out []tcpSocket
	for _, s := range socks {
		if s.state == "0A" {
			out = append(out, s)
		}
	}
	return out
}

// ---- assertions ----

// outputOf decodes a run's output.
func outputOf(t *testing.T, run mesh.TaskRun) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(run.Output, &out); err != nil {
		t.Fatalf("output of run %s is not a JSON object: %v: %s", run.ID, err, run.Output)
	}
	return out
}

// wantError checks a failed run's error code and that its message has text.
func wantError(t *testing.T, run mesh.TaskRun, code, text string) {
	t.Helper()
	if run.Error == nil {
		t.Fatalf("run %s has no error; output %s", run.ID, run.Output)
	}
	if run.Error.Code != code {
		t.Errorf("run %s failed with %s (%s), want %s", run.ID, run.Error.Code, run.Error.Message, code)
	}
	if !strings.Contains(run.Error.Message, text) {
		t.Errorf("run %s error message %q does not contain %q", run.ID, run.Error.Message, text)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
