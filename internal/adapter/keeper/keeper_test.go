package keeper

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	Init()
	os.Exit(m.Run())
}

// startHost runs script under a keeper, in a folder of its own given as
// $DIR, and returns the keeper and the folder.
func startHost(t *testing.T, script string, env ...string) (*Keeper, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "host.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	env = append([]string{"PATH=" + os.Getenv("PATH"), "DIR=" + dir}, env...)
	k, err := Start(Spec{Path: path, Args: []string{path}, Dir: dir, Env: env, Grace: 200 * time.Millisecond}, null, null, null)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		k.Stop()
		_, _ = k.Wait()
	})
	return k, dir
}

// readPID waits for a script to write a pid into path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, func() bool {
		b, err := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}, "a pid in "+path)
	return pid
}

func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func TestKeeper_ReportsHowTheHostEnded(t *testing.T) {
	for _, tc := range []struct {
		script string
		check  func(syscall.WaitStatus) bool
	}{
		{"exit 0\n", func(ws syscall.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 0 }},
		{"exit 3\n", func(ws syscall.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 3 }},
		{"kill -TERM $$\n", func(ws syscall.WaitStatus) bool { return ws.Signaled() && ws.Signal() == syscall.SIGTERM }},
	} {
		k, _ := startHost(t, tc.script)
		ws, err := k.Wait()
		if err != nil || !tc.check(ws) {
			t.Errorf("%q: status %v, err %v", tc.script, ws, err)
		}
	}
}

// An environment that names a variable twice gives the host the last
// value only, as os/exec does: the adapter appends each task's own TMPDIR
// to its own environment, and a program that reads the first of two
// values would write where it must not.
func TestKeeper_TheLastValueOfARepeatedVariableWins(t *testing.T) {
	env, err := exec.LookPath("env")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "env"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// env itself is the host: a shell would tidy its environment before
	// passing it on.
	k, err := Start(Spec{Path: env, Args: []string{"env"}, Dir: t.TempDir(), Env: []string{"TMPDIR=/first", "HOME=/home", "TMPDIR=/last"}}, os.Stdin, out, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if ws, err := k.Wait(); err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("status %v, err %v", ws, err)
	}
	b, _ := os.ReadFile(out.Name())
	if got := strings.Fields(string(b)); !slices.Equal(got, []string{"HOME=/home", "TMPDIR=/last"}) {
		t.Fatalf("the host's environment is %q, want HOME=/home TMPDIR=/last", got)
	}
}

func TestKeeper_AHostThatCannotStartIsAStartError(t *testing.T) {
	_, err := Start(Spec{Path: "/nonexistent/host", Args: []string{"host"}, Dir: t.TempDir()}, os.Stdin, os.Stdout, os.Stderr)
	if !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("err = %v, want ENOENT", err)
	}
}

// A tool left behind in a session of its own, its parent gone, is still
// the keeper's: Stop ends it, with SIGKILL when it ignores SIGINT.
func TestKeeper_StopEndsOrphansInSessionsOfTheirOwn(t *testing.T) {
	k, dir := startHost(t, `sh -c 'setsid sh -c "trap \"\" INT; echo \$\$ > \"$DIR/tool\"; while :; do sleep 1; done" &'
while :; do sleep 1; done
`)
	tool := readPID(t, filepath.Join(dir, "tool"))
	eventually(t, func() bool { pgid, _ := syscall.Getpgid(tool); return pgid == tool }, "the tool in a session of its own")
	k.Stop()
	ws, err := k.Wait()
	if err != nil || !ws.Signaled() {
		t.Fatalf("status %v, err %v; want the host ended by a signal", ws, err)
	}
	if running(tool) {
		t.Fatalf("the orphaned tool %d outlived its keeper", tool)
	}
}

// Nothing of the host's command line or environment shows in the keeper's
// own: ps shows only the program and the mode.
func TestKeeper_ItsCommandLineAndEnvironmentHoldNothingOfTheHost(t *testing.T) {
	const secret = "sk-keeper-secret-5566"
	k, _ := startHost(t, "while :; do sleep 1; done\n", "API_KEY="+secret)
	pid := strconv.Itoa(k.cmd.Process.Pid)
	cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	environ, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	if len(args) != 2 || args[1] != modeArg || strings.Contains(string(cmdline), "host.sh") {
		t.Errorf("keeper command line %q", args)
	}
	if len(environ) != 0 {
		t.Errorf("keeper environment %q, want none", environ)
	}
}
