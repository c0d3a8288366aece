package hosts_test

import (
	"cmp"
	"fmt"
	"net/http"
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

	"github.com/a2amesh/a2amesh/internal/adapter/keeper"
	"github.com/a2amesh/a2amesh/internal/testkit/fakemodel"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// The tests in this file drive the real agent host CLIs, as installed from
// npm by install-clis.sh, through the platform, the real a2a-runtime and
// a2a-adapter processes, against a fake model API (internal/testkit/fakemodel):
// the only fake in them. A2A_HOST_CLIS names the folder the CLIs are in
// (default: .hostclis at the repository root); a test fails when its CLI
// is not there.

// waitHost bounds one step of a real host: a Node CLI starting on a busy
// machine, a model call, a retry.
const waitHost = 120 * time.Second

// hostCLIs returns the folder of the installed host CLIs.
func hostCLIs(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("A2A_HOST_CLIS")
	if dir == "" {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".hostclis")
	}
	return dir
}

// realHost says how to run one host CLI against the fake model.
type realHost struct {
	// name is the adapter's provider.
	name string
	// bin is the executable, relative to the CLIs folder.
	bin string
	// keyEnv is the variable the host reads its API key from.
	keyEnv string
	// executor is the runtime's local executor type.
	executor string
	// flags are the adapter's host flags.
	flags []string
	// configure writes the host's own configuration into home and returns
	// the environment pointing it at the model.
	configure func(t *testing.T, home, modelURL string) []string
	// server, when set, starts the host's own server (a gateway the
	// adapter talks to) and returns the adapter flags that reach it.
	server func(t *testing.T, l *realLab) []string
	// progress is a progress message the artifact scenario's tool call
	// shows while it runs: default "running: printf", "*" for any.
	progress string
	// shell is the host's tool call running a shell command.
	shell func(command string) *fakemodel.ToolCall
	// toolsOutsideAdapter marks a host whose tools run in a server the
	// adapter did not start (the OpenClaw gateway): the adapter cancels
	// the gateway's run by closing its request, and the gateway's exec
	// tool leaves a process in a session of its own running. The test
	// ends such a process itself, so the cancel's other checks still run.
	toolsOutsideAdapter bool
	// retry is how the host's retries of the model API read as progress;
	// empty for a host that does not tell its clients about them.
	retry string
}

var realHosts = map[string]realHost{
	"claude": {
		name: "claude", bin: "claude/node_modules/.bin/claude", keyEnv: "ANTHROPIC_API_KEY", executor: "claude_cli", retry: "API retry 1/2",
		flags: []string{"--allowed-tools", "Bash"},
		configure: func(t *testing.T, home, modelURL string) []string {
			// Two retries instead of ten keep a failing model call short.
			return []string{"ANTHROPIC_BASE_URL=" + modelURL, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_MAX_RETRIES=2"}
		},
		shell: func(command string) *fakemodel.ToolCall {
			return &fakemodel.ToolCall{Name: "Bash", Args: map[string]any{"command": command, "description": "run it"}}
		},
	},
	"gemini": {
		name: "gemini", bin: "gemini/node_modules/.bin/gemini", keyEnv: "GEMINI_API_KEY", executor: "gemini", retry: "model API retry 1 (HTTP 500)",
		// A fixed model: "auto" asks a router model first, which the fake
		// does not play.
		flags: []string{"--model", "gemini-2.5-flash", "--approval-mode", "yolo"},
		configure: func(t *testing.T, home, modelURL string) []string {
			// With GOOGLE_GEMINI_BASE_URL alone Gemini CLI picks its
			// "gateway" sign-in, which headless runs refuse; a user of an
			// API key behind a gateway selects the key in settings. Two
			// attempts instead of ten keep a failing model call short.
			writeFile(t, filepath.Join(home, ".gemini", "settings.json"), `{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"maxAttempts":2}}`)
			return []string{"GOOGLE_GEMINI_BASE_URL=" + modelURL}
		},
		shell: func(command string) *fakemodel.ToolCall {
			return &fakemodel.ToolCall{Name: "run_shell_command", Args: map[string]any{"command": command}}
		},
	},
	"codex": {
		name: "codex", bin: "codex/node_modules/.bin/codex", keyEnv: "CODEX_API_KEY", executor: "codex", retry: "Reconnecting... 1/",
		configure: func(t *testing.T, home, modelURL string) []string {
			writeFile(t, filepath.Join(home, ".codex", "config.toml"), fmt.Sprintf("openai_base_url = %q\nmodel = \"gpt-5.1-codex\"\n", modelURL+"/v1"))
			return nil
		},
		shell: func(command string) *fakemodel.ToolCall {
			return &fakemodel.ToolCall{Name: "exec_command", Args: map[string]any{"cmd": command}}
		},
	},
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// realLab is one host's machine: the fake model, the adapter and the
// runtime, connected to a platform.
type realLab struct {
	host    realHost
	secret  string
	bin     string // the host CLI
	path    string // PATH with Node 24 first
	home    string
	hostEnv []string // what the host needs besides its key
	sysTmp  string   // the adapter's TMPDIR, which hosts must leave alone
	// hostFlags are the adapter flags that reach the host (reachHost).
	hostFlags []string
	model     *fakemodel.Server
	p         *meshtest.Platform
	adapter   *proc
	runtime   *proc
	agent     mesh.Agent
	sleep     int // the argument of the sleep the cancel scenario starts
	// modelKey is the key the model accepts: the host's own key, or for a
	// gateway host the key of its model provider.
	modelKey string

	mu      sync.Mutex
	release map[string]chan struct{}
}

func newRealLab(t *testing.T, name string) *realLab {
	t.Helper()
	h := realHosts[name]
	clis := hostCLIs(t)
	bin := filepath.Join(clis, h.bin)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is not installed in %s (run e2e/hosts/install-clis.sh): %v", h.name, clis, err)
	}
	l := &realLab{
		host: h, bin: bin, secret: "sk-e2e-" + name + "-5f4e3d2c1b0a9988",
		path:    filepath.Join(clis, "node", "node_modules", ".bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		home:    t.TempDir(),
		sleep:   3000 + int(time.Now().UnixNano()%900),
		release: map[string]chan struct{}{},
	}
	l.model = fakemodel.Start(t, l.respond)
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range l.model.Requests() {
				scen := scenarioRE.FindAllString(string(r.Body), -1)
				t.Logf("model request %s %s (%s) tools %v, after a tool result %v, scenarios %v", r.Method, r.Path, r.API, r.Tools(), r.AfterToolResult(), scen)
			}
		}
	})
	l.sysTmp = filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(l.sysTmp, 0o700); err != nil {
		t.Fatal(err)
	}
	l.hostEnv = append(h.configure(t, l.home, l.model.URL), "PATH="+l.path, "HOME="+l.home, "TMPDIR="+l.sysTmp)
	return l
}

// reachHost returns the adapter flags that reach the host: its executable,
// or the address of its server, which it starts on first use.
func (l *realLab) reachHost(t *testing.T) []string {
	t.Helper()
	if l.hostFlags != nil {
		return l.hostFlags
	}
	if l.host.server != nil {
		l.hostFlags = l.host.server(t, l)
	} else {
		l.hostFlags = []string{"--host-binary", l.bin}
	}
	return l.hostFlags
}

// start starts the platform, the adapter and the runtime.
func (l *realLab) start(t *testing.T) {
	t.Helper()
	l.p = meshtest.StartPlatform(t)
	runtimeBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-runtime")
	adapterBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-adapter")
	dir := t.TempDir()
	addr := meshtest.FreeAddr(t)
	args := []string{"--provider", l.host.name, "--listen", addr,
		"--workdir", filepath.Join(dir, "work"), "--session-persistence", "--state-dir", filepath.Join(dir, "state"),
		"--kill-grace", "2s", "--log-level", "debug"}
	args = append(args, l.reachHost(t)...)
	args = append(args, l.host.flags...)
	l.adapter = startProcess(t, "a2a-adapter", append(l.hostEnv, l.host.keyEnv+"="+l.secret), adapterBin, args...)
	l.adapter.waitOutput(t, "a2a-adapter listening on http://"+addr)

	l.p.Do(http.MethodPost, "/agent-accounts", map[string]any{"name": l.host.name + " real", "instructions": "You are the e2e agent."}, &l.agent)
	pair := exec.Command(runtimeBin, "pair", l.p.PairingCode(l.agent.ID), "--api-base", l.p.APIBase,
		"--local-agent-endpoint", "http://"+addr+"/run-task", "--local-executor-type", l.host.executor)
	pair.Env = append(os.Environ(), "HOME="+l.home)
	if out, err := pair.CombinedOutput(); err != nil {
		t.Fatalf("a2a-runtime pair: %v\n%s", err, out)
	}
	l.runtime = startProcess(t, "a2a-runtime", []string{"HOME=" + l.home}, runtimeBin, "start", "--log-level", "debug")
	l.runtime.waitOutput(t, `"message":"runtime started"`)
}

// holdFor returns the channel the scenario's last answer waits on.
func (l *realLab) holdFor(scenario string) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch, ok := l.release[scenario]
	if !ok {
		ch = make(chan struct{})
		l.release[scenario] = ch
	}
	return ch
}

var (
	scenarioRE  = regexp.MustCompile(`@@([a-z0-9]+)@@`)
	outputDirRE = regexp.MustCompile(`Files you want to deliver go in (/[^\s"\\]+?)\.(?:\\n|\s|")`)
)

// respond plays the model. The prompt of each task names its scenario
// (@@name@@); a request carries the whole conversation, so the last
// scenario named is the current one.
func (l *realLab) respond(r *fakemodel.Request) fakemodel.Reply {
	if r.Key() != cmp.Or(l.modelKey, l.secret) {
		return fakemodel.Reply{Status: http.StatusUnauthorized, ErrorMessage: "invalid api key (fake model)"}
	}
	all := scenarioRE.FindAllStringSubmatch(string(r.Body), -1)
	if len(all) == 0 || len(r.Tools()) == 0 {
		return fakemodel.Reply{Text: "OK"}
	}
	switch scenario := all[len(all)-1][1]; scenario {
	case "artifact":
		if r.AfterToolResult() {
			return fakemodel.Reply{Text: "Report written. All done.", Hold: l.holdFor(scenario)}
		}
		dir := outputDirRE.FindStringSubmatch(string(r.Body))
		if dir == nil {
			return fakemodel.Reply{Text: "No output folder was named."}
		}
		return fakemodel.Reply{Text: "I will write the report.", Tool: l.host.shell("printf '# Real host report\\n' > " + dir[1] + "/report.md")}
	case "resume":
		return fakemodel.Reply{Text: "Second answer."}
	case "plain":
		return fakemodel.Reply{Text: "A plain answer."}
	case "fail401":
		return fakemodel.Reply{Status: http.StatusUnauthorized, ErrorMessage: "invalid x-api-key (fake model)"}
	case "fail500":
		return fakemodel.Reply{Status: http.StatusInternalServerError, ErrorMessage: "the fake model broke"}
	case "cancel":
		if r.AfterToolResult() {
			return fakemodel.Reply{Text: "The sleep ended."}
		}
		return fakemodel.Reply{Text: "Sleeping.", Tool: l.host.shell("setsid sleep " + strconv.Itoa(l.sleep))}
	}
	return fakemodel.Reply{Text: "OK"}
}

// progressMessages are the progress messages of a run's events.
func progressMessages(evs []meshtest.Event, id string) []string {
	var out []string
	for _, ev := range evs {
		if ev.Subject == id && ev.Type == mesh.EventTaskRunProgress {
			out = append(out, string(ev.Data))
		}
	}
	return out
}

func testRealHost(t *testing.T, name string) {
	t.Parallel()
	l := newRealLab(t, name)
	l.start(t)
	p := l.p

	// A task completes with the model's answer; its tool call shows as live
	// progress while the model still holds the answer; the file the host
	// wrote becomes an artifact.
	first := p.CreateTask(l.agent.ID, "@@artifact@@ Write the report.")
	stream := p.StreamEvents(t, url.Values{"task_run_id": {first.ID}, "since": {"1m"}})
	evs := stream.Until(t, waitHost, func(ev meshtest.Event) bool {
		return ev.Subject == first.ID && (ev.Type == mesh.EventTaskRunProgress && strings.Contains(string(ev.Data), cmp.Or(l.host.progress, "running: printf")) ||
			ev.Type == mesh.EventTaskRunProgress && l.host.progress == "*" ||
			ev.Type == mesh.EventTaskRunFailed || ev.Type == mesh.EventTaskRunCompleted)
	})
	if run := p.GetTask(first.ID); run.Status != mesh.StatusRunning {
		t.Fatalf("the run is %s while the model holds its answer (error %+v); progress was not live: %q", run.Status, run.Error, progressMessages(evs, first.ID))
	}
	close(l.holdFor("artifact"))
	run1 := waitEnd(t, p, first.ID, mesh.StatusCompleted)
	if out := outputOf(t, run1); !strings.Contains(out.Text, "Report written. All done.") {
		t.Errorf("answer %q, want the model's", out.Text)
	}
	if len(run1.Artifacts) != 1 || run1.Artifacts[0].Filename != "report.md" {
		t.Fatalf("artifacts %+v, want report.md", run1.Artifacts)
	}
	content := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + run1.Artifacts[0].ArtifactID + "/content", Owner: true}).Expect(t, http.StatusOK).Body
	if string(content) != "# Real host report\n" {
		t.Errorf("artifact content %q", content)
	}

	// The next task of the conversation resumes the host's session: the
	// model sees the earlier turn.
	second := p.CreateTaskWith(t, map[string]any{"target_agent_id": l.agent.ID, "conversation_id": run1.ConversationID,
		"input": map[string]any{"text": "@@resume@@ And now?"}}).Expect(t, http.StatusCreated).Run(t)
	run2 := waitEnd(t, p, second.ID, mesh.StatusCompleted)
	if out := outputOf(t, run2); !strings.Contains(out.Text, "Second answer.") {
		t.Errorf("second answer %q", out.Text)
	}
	l.model.WaitRequest(t, time.Second, func(r *fakemodel.Request) bool {
		return r.Contains("@@resume@@") && r.Contains("@@artifact@@ Write the report.")
	})

	// A model that keeps failing: the host's retries show as progress,
	// then the run fails with the host's message.
	broken := p.CreateTask(l.agent.ID, "@@fail500@@ Try again.")
	brokenEvents := p.StreamEvents(t, url.Values{"task_run_id": {broken.ID}, "since": {"1m"}})
	evs = brokenEvents.Until(t, waitHost, meshtest.TypeIs(mesh.EventTaskRunFailed, broken.ID))
	if l.host.retry != "" && !slices.ContainsFunc(progressMessages(evs, broken.ID), func(m string) bool { return strings.Contains(m, l.host.retry) }) {
		t.Errorf("no retry (%q) among the progress of a run whose model failed: %q", l.host.retry, progressMessages(evs, broken.ID))
	}
	run4 := waitEnd(t, p, broken.ID, mesh.StatusFailed)
	// Codex words a 500 as its own "high demand" notice, OpenClaw as an
	// "upstream provider error".
	if run4.Error == nil || !strings.Contains(run4.Error.Message, "500") && !strings.Contains(run4.Error.Message, "the fake model broke") &&
		!strings.Contains(run4.Error.Message, "high demand") && !strings.Contains(run4.Error.Message, "upstream provider error") {
		t.Errorf("the failed run's error %+v does not carry the host's message", run4.Error)
	}

	// Cancel during a tool call that started sleep in its own session: no
	// process is left behind.
	canceled := p.CreateTask(l.agent.ID, "@@cancel@@ Sleep.")
	pids := waitProcesses(t, "sleep "+strconv.Itoa(l.sleep))
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + canceled.ID + "/cancel", Owner: true, JSON: map[string]any{"reason": "enough"}}).
		Expect(t, http.StatusOK)
	waitEnd(t, p, canceled.ID, mesh.StatusCanceled)
	if l.host.toolsOutsideAdapter {
		// Not the adapter's process to stop; see realHost.toolsOutsideAdapter.
		for _, pid := range findProcesses("sleep " + strconv.Itoa(l.sleep)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	meshtest.Eventually(t, 15*time.Second, func() bool { return len(findProcesses("sleep "+strconv.Itoa(l.sleep))) == 0 },
		func() string {
			return fmt.Sprintf("the tool's sleep (pids %v) outlived the canceled task: %v", pids, findProcesses("sleep "+strconv.Itoa(l.sleep)))
		})

	// A refused key fails the run with the host's message, and no secret.
	// It comes last: OpenClaw then rests the model's key for a minute.
	failed := p.CreateTask(l.agent.ID, "@@fail401@@ Try it.")
	run3 := waitEnd(t, p, failed.ID, mesh.StatusFailed)
	if run3.Error == nil || !saysRefused(run3.Error.Message) {
		t.Errorf("the failed run's error %+v does not say the model refused the key", run3.Error)
	}
	if run3.Error != nil && strings.Contains(run3.Error.Message, "\x1b[") {
		t.Errorf("the error carries terminal colour codes: %q", run3.Error.Message)
	}

	// Hosts kept their temporary files in each run's folder, which is gone.
	if left, _ := os.ReadDir(l.sysTmp); len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("the host wrote into the adapter's temporary folder: %q", names)
	}

	texts := map[string]string{"adapter output": l.adapter.output(), "runtime output": l.runtime.output(), "platform logs": p.Logs.String()}
	for _, r := range []mesh.TaskRun{run1, run2, run3, run4} {
		texts["run "+r.ID] = string(r.Output) + meshtest.JSON(r.Error)
	}
	meshtest.AssertNoSecrets(t, []string{l.secret}, texts)

	if !l.host.toolsOutsideAdapter {
		l.killAdapterMidTask(t)
	}
}

// killAdapterMidTask kills the adapter (SIGKILL) during a tool call that
// started sleep in its own session: the host and the sleep end with it.
// It comes last: the adapter is gone afterwards.
func (l *realLab) killAdapterMidTask(t *testing.T) {
	t.Helper()
	l.p.CreateTask(l.agent.ID, "@@cancel@@ Sleep, then lose the adapter.")
	sleeps := waitProcesses(t, "sleep "+strconv.Itoa(l.sleep))
	task := append(keeper.Descendants(l.adapter.cmd.Process.Pid), sleeps...)
	if err := l.adapter.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-l.adapter.done
	left := func() []int {
		var alive []int
		for _, pid := range task {
			if processRuns(pid) {
				alive = append(alive, pid)
			}
		}
		return alive
	}
	meshtest.Eventually(t, 15*time.Second, func() bool { return len(left()) == 0 }, func() string {
		return fmt.Sprintf("processes of the task outlived the killed adapter: %v", left())
	})
}

// processRuns reports whether pid exists and is not a zombie, which has
// finished and only waits for its status to be collected.
func processRuns(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// saysRefused reports whether a failure message says the model refused the
// credential, in any of the hosts' words.
func saysRefused(msg string) bool {
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "401") || strings.Contains(msg, "api key") || strings.Contains(msg, "auth")
}

func waitEnd(t *testing.T, p *meshtest.Platform, id string, want mesh.Status) mesh.TaskRun {
	t.Helper()
	run := p.WaitTask(id, waitHost, func(r mesh.TaskRun) bool { return r.Status.Terminal() })
	if run.Status != want {
		t.Fatalf("run %s ended %s, want %s: error %+v output %s", id, run.Status, want, run.Error, run.Output)
	}
	return run
}

// findProcesses returns the processes whose command line is cmdline.
func findProcesses(cmdline string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ") == cmdline {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitProcesses(t *testing.T, cmdline string) []int {
	t.Helper()
	var pids []int
	meshtest.Eventually(t, waitHost, func() bool {
		pids = findProcesses(cmdline)
		return len(pids) > 0
	}, func() string { return "the host never started " + cmdline })
	return pids
}

func TestRealClaude_TaskProgressArtifactResumeErrorAndCancel(t *testing.T) { testRealHost(t, "claude") }

func TestRealGemini_TaskProgressArtifactResumeErrorAndCancel(t *testing.T) { testRealHost(t, "gemini") }

func TestRealCodex_TaskProgressArtifactResumeErrorAndCancel(t *testing.T) { testRealHost(t, "codex") }

// doctor runs a2a-adapter doctor for the lab's host with env, and returns
// its output and whether it said the host is ready.
func (l *realLab) doctor(t *testing.T, adapterBin string, env ...string) (string, bool) {
	t.Helper()
	args := append([]string{"doctor", "--provider", l.host.name}, l.hostFlags...)
	for i, f := range l.host.flags {
		if f == "--model" {
			args = append(args, f, l.host.flags[i+1])
		}
	}
	cmd := exec.Command(adapterBin, args...)
	cmd.Env = append(append(os.Environ(), l.hostEnv...), env...)
	out, err := cmd.CombinedOutput()
	ready := strings.Contains(string(out), "Ready: a2a-adapter --provider "+l.host.name)
	if (err == nil) != ready {
		t.Errorf("doctor exited with %v but printed:\n%s", err, out)
	}
	return string(out), ready
}

// Doctor's verdict matches what a task would meet: it runs a real headless
// call, so a host with its key is ready, and a key the model refuses, or
// none, is reported, naming the variable the host really reads.
func TestRealHosts_DoctorVerdictMatchesReality(t *testing.T) {
	adapterBin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-adapter")
	for _, name := range []string{"claude", "gemini", "codex", "openclaw"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := newRealLab(t, name)
			l.reachHost(t)
			out, ready := l.doctor(t, adapterBin, l.host.keyEnv+"="+l.secret)
			if !ready || !strings.Contains(out, "headless run") {
				t.Errorf("doctor with the right key:\n%s", out)
			}
			// A CLI host's refused key shows in the headless run; the
			// gateway refuses a wrong token before.
			out, ready = l.doctor(t, adapterBin, l.host.keyEnv+"=sk-wrong-key-000")
			if ready || l.host.server == nil && !strings.Contains(out, "headless run") {
				t.Errorf("doctor with a key the model refuses:\n%s", out)
			}
			meshtest.AssertNoSecrets(t, []string{l.secret, "sk-wrong-key-000"}, map[string]string{"doctor output": out})
			if name == "codex" {
				// Codex reads CODEX_API_KEY; OPENAI_API_KEY alone gives
				// its runs no credential.
				out, ready = l.doctor(t, adapterBin, "OPENAI_API_KEY="+l.secret)
				if ready || !strings.Contains(out, "CODEX_API_KEY") {
					t.Errorf("doctor with only OPENAI_API_KEY:\n%s", out)
				}
			}
		})
	}
}
