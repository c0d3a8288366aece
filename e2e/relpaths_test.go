package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// runIn runs a command to its end in dir, with extra environment.
func (l *lab) runIn(dir, name string, env []string, bin string, args ...string) result {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
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

// startCmd starts cmd as one of the test's processes: its output kept, and
// killed when the test ends.
func (l *lab) startCmd(name string, cmd *exec.Cmd) *proc {
	l.t.Helper()
	p := &proc{l: l, name: l.name(name), done: make(chan struct{}), cmd: cmd}
	cmd.Stdout, cmd.Stderr = &p.stdout, &p.stderr
	if err := cmd.Start(); err != nil {
		l.t.Fatalf("start %s: %v", p.name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.mu.Unlock()
	return p
}

// storedProfile is the active profile of runtime.json with the fields
// pairing resolves against the folder it ran in.
type storedProfile struct {
	LocalExecutor struct {
		Workspace       string `json:"workspace"`
		Cwd             string `json:"cwd"`
		InstructionFile string `json:"instruction_file"`
	} `json:"local_executor"`
	SupervisedAdapter struct {
		Args []string `json:"args"`
	} `json:"supervised_adapter"`
}

func (m *machine) activeProfile() storedProfile {
	t := m.l.t
	t.Helper()
	var f struct {
		Active   string                   `json:"active_profile"`
		Profiles map[string]storedProfile `json:"profiles"`
	}
	if err := json.Unmarshal([]byte(meshtest.ReadFile(m.profilePath())), &f); err != nil {
		t.Fatal(err)
	}
	return f.Profiles[f.Active]
}

// The example of docs/runtime.md, `pair … --adapter command -- --workdir
// ./work -- ./my-agent.sh`, run in one folder, stores its paths (and those
// of pair's own flags) as absolute paths of that folder, so `start` run
// from another folder starts the adapter and completes tasks with them.
func TestPair_RelativePathsAreStoredAbsoluteSoStartWorksFromAnotherFolder(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	m := l.newMachine()
	agent := p.CreateAgent("relative")
	pairDir, elsewhere := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(pairDir, "my-agent.sh"), []byte("#!/bin/sh\necho \"my agent got: $(cat)\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pairDir, "instructions.md"), []byte("be brief"), 0o600); err != nil {
		t.Fatal(err)
	}
	code := p.PairingCode(agent.ID)
	l.secrets.Add(code)
	res := l.runIn(pairDir, "a2a-runtime pair", append(m.env(), "A2A_PAIRING_CODE="+code), bins.Runtime, "pair",
		"--api-base", p.APIBase, "--local-agent-endpoint", "http://"+meshtest.FreeAddr(t)+"/run-task",
		"--cwd", ".", "--workspace", "ws", "--instruction-file", "./AGENTS.md",
		"--adapter", "command", "--", "--workdir", "./work", "--instruction-file=instructions.md", "--", "./my-agent.sh")
	if res.code != 0 {
		t.Fatalf("pair: %s", res)
	}
	prof := m.activeProfile()
	wantArgs := []string{"--workdir", filepath.Join(pairDir, "work"), "--instruction-file=" + filepath.Join(pairDir, "instructions.md"),
		"--", filepath.Join(pairDir, "my-agent.sh")}
	if !slices.Equal(prof.SupervisedAdapter.Args, wantArgs) {
		t.Errorf("stored adapter arguments %q, want %q", prof.SupervisedAdapter.Args, wantArgs)
	}
	ex := prof.LocalExecutor
	if ex.Cwd != pairDir || ex.Workspace != filepath.Join(pairDir, "ws") || ex.InstructionFile != filepath.Join(pairDir, "AGENTS.md") {
		t.Errorf("stored local executor cwd %q, workspace %q, instruction file %q; want them under %s", ex.Cwd, ex.Workspace, ex.InstructionFile, pairDir)
	}

	cmd := exec.Command(bins.Runtime, "start", "--log-level", "debug")
	cmd.Dir, cmd.Env = elsewhere, append(os.Environ(), m.env()...)
	rt := l.startCmd("a2a-runtime start", cmd)
	rt.waitOutput(t, `"message":"runtime started"`, waitStart)
	run := waitEnded(t, p.Platform, p.CreateTask(agent.ID, "hello").ID, mesh.StatusCompleted, waitStart)
	if got := fmt.Sprint(outputOf(t, run)["text"]); !strings.Contains(got, "my agent got: hello") {
		t.Errorf("the run's output is %v, want the agent's answer", got)
	}
	if _, err := os.Stat(filepath.Join(pairDir, "work")); err != nil {
		t.Errorf("the adapter did not work in the work folder pair was given: %v", err)
	}
}

// unitSettings reads the lines of a systemd unit that say how it runs.
func unitSettings(t *testing.T, unit string) (execStart []string, env map[string]string, workdir string) {
	t.Helper()
	env = map[string]string{}
	for _, line := range strings.Split(unit, "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch key {
		case "ExecStart":
			execStart = systemdWords(t, value, true)
		case "Environment":
			for _, w := range systemdWords(t, value, false) {
				k, v, _ := strings.Cut(w, "=")
				env[k] = v
			}
		case "WorkingDirectory":
			workdir = strings.ReplaceAll(value, "%%", "%")
		}
	}
	return execStart, env, workdir
}

// systemdWords splits a unit's value into words as systemd does: double
// quotes with backslash escapes, %% for %, and on command lines $$ for $.
func systemdWords(t *testing.T, s string, command bool) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			quoted, in = !quoted, true
		case c == '\\' && quoted && i+1 < len(s):
			i++
			w.WriteByte(s[i])
		case (c == '%' || (command && c == '$')) && i+1 < len(s) && s[i+1] == c:
			i++
			w.WriteByte(c)
		case c == ' ' && !quoted:
			if in {
				words, in = append(words, w.String()), false
				w.Reset()
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quotes in %q", s)
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// systemdDefaultPath is the PATH systemd gives a service that sets none.
const systemdDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// A service does not get the shell's PATH: the unit `service install`
// writes records the installing shell's PATH and runs in the user's home,
// so its ExecStart, run with nothing but the unit's environment in its
// working directory, starts an adapter that finds an agent program that
// is only on that shell's PATH, and completes a task with it.
func TestService_UnitCarriesTheInstallingShellsPathAndAWorkingDirectory(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	m := l.newMachine()
	tools := t.TempDir()
	fakeCommand(t, tools, "my-host-cli", "echo \"host cli got: $(cat)\"\n")
	pr := m.pair(p.Platform, p.CreateAgent("service path").ID, "http://"+meshtest.FreeAddr(t)+"/run-task",
		"--adapter", "command", "--", "--", "my-host-cli")

	bin, calls := t.TempDir(), filepath.Join(t.TempDir(), "calls")
	fakeCommand(t, bin, "systemctl", "echo \"systemctl $*\" >> '"+calls+"'\n")
	fakeCommand(t, bin, "loginctl", "echo \"loginctl $*\" >> '"+calls+"'\n")
	shellPath := strings.Join([]string{bin, tools, systemdDefaultPath}, string(os.PathListSeparator))
	if res := l.run("a2a-runtime service install", append(m.env(), "PATH="+shellPath), bins.Runtime, "service", "install"); res.code != 0 {
		t.Fatalf("service install: %s", res)
	}
	units := unitFiles(m)
	if len(units) != 1 {
		t.Fatalf("want one unit file, got %v", units)
	}
	unit := meshtest.ReadFile(units[0])
	execStart, env, workdir := unitSettings(t, unit)
	if workdir != m.Home {
		t.Errorf("the unit's WorkingDirectory is %q, want the home folder %s:\n%s", workdir, m.Home, unit)
	}
	if !slices.Contains(filepath.SplitList(env["PATH"]), tools) {
		t.Errorf("the unit's PATH %q lacks %s, where the installing shell finds my-host-cli:\n%s", env["PATH"], tools, unit)
	}
	if len(execStart) < 2 || execStart[0] != bins.Runtime || execStart[1] != "start" {
		t.Fatalf("the unit's ExecStart is %q:\n%s", execStart, unit)
	}
	if strings.Contains(unit, pr.Token) {
		t.Fatalf("the unit holds the token")
	}

	// Run it as systemd would: the unit's environment only, in its folder.
	path := env["PATH"]
	if path == "" {
		path = systemdDefaultPath
	}
	if workdir == "" {
		workdir = "/"
	}
	cmd := exec.Command(execStart[0], append(execStart[1:], "--log-level", "debug")...)
	cmd.Dir, cmd.Env = workdir, []string{"HOME=" + m.Home, "PATH=" + path}
	svc := l.startCmd("the unit's ExecStart", cmd)
	svc.waitOutput(t, `"message":"runtime started"`, waitStart)
	run := waitEnded(t, p.Platform, p.CreateTask(pr.AgentID, "hello").ID, mesh.StatusCompleted, waitStart)
	if got := fmt.Sprint(outputOf(t, run)["text"]); !strings.Contains(got, "host cli got: hello") {
		t.Errorf("the run's output is %v, want my-host-cli's answer", got)
	}
}
