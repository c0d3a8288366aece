package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// Seed 001 §9 "Pair": pairing writes ~/.a2a/runtime.json, private, with every
// §5.1 field and the new profile active; the token is in the file only.
func TestPair_WritesPrivateProfileWithEveryFieldAndNeverPrintsTheToken(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.CreateAgent("pair")
	m := l.newMachine()
	code := p.PairingCode(agent.ID)
	endpoint := "http://127.0.0.1:18790/run-task"
	res := m.cli("pair", code, "--api-base", p.APIBase, "--local-agent-endpoint", endpoint,
		"--local-executor-type", "claude_cli", "--local-executor-ref", "claude-main",
		"--workspace", "/srv/agent/ws", "--cwd", "/srv/agent", "--instruction-file", "/srv/agent/CLAUDE.md",
		"--device-name", "build-box")
	if res.code != 0 {
		t.Fatalf("pair failed: %s", res)
	}

	for path, want := range map[string]os.FileMode{filepath.Join(m.Home, ".a2a"): 0o700, m.profilePath(): 0o600} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s has mode %04o, want %04o", path, got, want)
		}
	}

	var file struct {
		ActiveProfile string                    `json:"active_profile"`
		Profiles      map[string]map[string]any `json:"profiles"`
	}
	if err := json.Unmarshal([]byte(meshtest.ReadFile(m.profilePath())), &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Profiles) != 1 {
		t.Fatalf("want one profile, got %d", len(file.Profiles))
	}
	prof := file.Profiles[file.ActiveProfile]
	if prof == nil {
		t.Fatalf("active_profile %q names no profile", file.ActiveProfile)
	}
	runtimeID, _ := prof["runtime_id"].(string)
	token, _ := prof["runtime_token"].(string)
	if file.ActiveProfile != agent.ID+"/"+runtimeID {
		t.Errorf("active_profile is %q, want {agent_id}/{runtime_id} = %s/%s", file.ActiveProfile, agent.ID, runtimeID)
	}
	if runtimeID == "" || len(token) < 16 {
		t.Fatalf("profile lacks runtime_id or runtime_token: runtime_id %q, token of %d characters", runtimeID, len(token))
	}
	for field, want := range map[string]any{
		"agent_id":             agent.ID,
		"api_base":             p.APIBase,
		"local_agent_endpoint": endpoint,
		"adapter":              "http",
		"heartbeat_timeout_ms": float64(testHeartbeatTimeout.Milliseconds()),
		"device_name":          "build-box",
	} {
		if prof[field] != want {
			t.Errorf("profile %s = %v, want %v", field, prof[field], want)
		}
	}
	executor, _ := prof["local_executor"].(map[string]any)
	for field, want := range map[string]string{
		"type": "claude_cli", "ref": "claude-main", "workspace": "/srv/agent/ws", "cwd": "/srv/agent", "instruction_file": "/srv/agent/CLAUDE.md",
	} {
		if executor[field] != want {
			t.Errorf("profile local_executor.%s = %v, want %q", field, executor[field], want)
		}
	}
	if _, ok := prof["last_heartbeat_at"]; ok {
		t.Errorf("last_heartbeat_at is set before the runtime ever ran: %v", prof["last_heartbeat_at"])
	}

	out := res.stdout + res.stderr
	if strings.Contains(out, token) {
		t.Errorf("pair printed the runtime token:\n%s", out)
	}
	if strings.Contains(out, code) {
		t.Errorf("pair printed the pairing code:\n%s", out)
	}
	if !strings.Contains(out, runtimeID) || !strings.Contains(out, agent.ID) {
		t.Errorf("pair does not say which agent and runtime it paired:\n%s", out)
	}

	// The platform knows the runtime by the device and host it was paired with.
	v := p.RuntimeView(t, agent.ID, runtimeID)
	if v.DeviceName != "build-box" || v.HostType != "claude_cli" {
		t.Errorf("platform shows device %q host %q, want build-box claude_cli", v.DeviceName, v.HostType)
	}

	// The code was used up: pairing again with it fails and leaves the file alone.
	before := meshtest.ReadFile(m.profilePath())
	again := m.cli("pair", code, "--api-base", p.APIBase)
	if again.code == 0 {
		t.Errorf("a pairing code was accepted twice: %s", again)
	}
	if meshtest.ReadFile(m.profilePath()) != before {
		t.Errorf("a failed pair changed the profile file")
	}
}

// A pairing code given as an argument leaves the process's arguments before
// the runtime talks to the platform, so a process listing never shows it.
func TestPair_CodeGivenAsArgumentIsNotInTheProcessArguments(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.CreateAgent("pair-argv")
	code := p.PairingCode(agent.ID)

	// A proxy in front of the platform holds the attach request until the
	// pair process's arguments have been read.
	target, _ := url.Parse(p.APIBase)
	arrived := make(chan []byte, 1)
	release := make(chan struct{})
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/attach-via-pairing") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			arrived <- body
			<-release
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	m := l.newMachine()
	pair := l.start("a2a-runtime pair", m.env(), bins.Runtime, "pair", code, "--api-base", front.URL, "--local-agent-endpoint", "http://127.0.0.1:18791/run-task")
	var body []byte
	select {
	case body = <-arrived:
	case <-pair.done:
		t.Fatalf("pair exited before it called the platform: %s", pair.output())
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pair.pid()) + "/cmdline")
	close(release)
	if err != nil {
		t.Fatalf("read the arguments of the running pair: %v", err)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) < 2 || args[1] != "pair" {
		t.Fatalf("pid %d is not the pair process: %q", pair.pid(), args)
	}
	if strings.Contains(string(cmdline), code) {
		t.Errorf("the pairing code is in the arguments of the running pair: %q", args)
	}
	if !bytes.Contains(body, []byte(code)) {
		t.Errorf("the attach request does not carry the pairing code: %s", body)
	}
	if c := pair.waitExit(t, waitStart); c != 0 {
		t.Fatalf("pair exited %d: %s", c, pair.output())
	}
	if strings.Contains(pair.output(), code) {
		t.Errorf("pair printed the pairing code:\n%s", pair.output())
	}
	if f := m.profileFile(); f.Profiles[f.ActiveProfile].AgentID != agent.ID {
		t.Errorf("pairing through the held request did not store a profile for agent %s: %+v", agent.ID, f)
	}
}

// Seed 000 "Environment binding": a pairing code only works on the platform
// that issued it; elsewhere pairing fails with a clear reason and writes
// nothing.
func TestPair_CodeFromAnotherPlatformIsRefusedAndWritesNothing(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	issuer := l.startPlatform(platformOptions{})
	other := l.startPlatform(platformOptions{})
	code := issuer.PairingCode(issuer.CreateAgent("elsewhere").ID)
	m := l.newMachine()
	res := m.cli("pair", code, "--api-base", other.APIBase)
	if res.code == 0 {
		t.Fatalf("a code from another platform was accepted: %s", res)
	}
	if !strings.Contains(res.stderr, other.APIBase) || !strings.Contains(strings.ToLower(res.stderr), "pairing") {
		t.Errorf("the error does not say where pairing failed:\n%s", res.stderr)
	}
	if strings.Contains(res.stdout+res.stderr, code) {
		t.Errorf("the refused code was printed")
	}
	if _, err := os.Stat(m.profilePath()); !os.IsNotExist(err) {
		t.Errorf("a refused pairing wrote %s (%v)", m.profilePath(), err)
	}
}

// Without a code argument and with standard input not a terminal (echo
// <code> | a2a-runtime pair ...), pair reads the code from standard input:
// it never is in a process's arguments, not even for an instant.
func TestPair_CodeOnStandardInputWithoutAnArgumentPairs(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.CreateAgent("pair-stdin")
	code := p.PairingCode(agent.ID)
	l.secrets.Add(code)
	m := l.newMachine()

	pair := exec.Command(bins.Runtime, "pair", "--api-base", p.APIBase, "--local-agent-endpoint", "http://127.0.0.1:18792/run-task", "--adapter", "echo")
	pair.Env = append(os.Environ(), m.env()...)
	pair.Stdin = strings.NewReader(code + "\n")
	out, err := pair.CombinedOutput()
	l.keep("a2a-runtime pair", string(out))
	if err != nil {
		t.Fatalf("pair with the code on standard input: %v\n%s", err, l.secrets.Mask(string(out)))
	}
	if strings.Contains(string(out), code) {
		t.Errorf("pair printed the pairing code:\n%s", l.secrets.Mask(string(out)))
	}
	if f := m.profileFile(); f.Profiles[f.ActiveProfile].AgentID != agent.ID {
		t.Errorf("no profile for agent %s after pairing over standard input: %v", agent.ID, f.names())
	}

	// Nothing on standard input: an error that says where the code goes.
	empty := exec.Command(bins.Runtime, "pair", "--api-base", p.APIBase)
	empty.Env = append(os.Environ(), l.newMachine().env()...)
	empty.Stdin = strings.NewReader("")
	out, err = empty.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no pairing code on standard input") {
		t.Errorf("pair with nothing on standard input: %v\n%s", err, out)
	}
}
