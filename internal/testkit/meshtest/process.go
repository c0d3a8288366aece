package meshtest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/natsserver"
)

// Remote returns a fixture that drives a platform running elsewhere (another
// process, or services started one by one) through its HTTP API. Only the
// HTTP helpers work on it: it has no in-process platform behind it.
func Remote(t testing.TB, apiBase, ownerToken string) *Platform {
	return &Platform{APIBase: apiBase, OwnerToken: ownerToken, Logs: &Logs{}, t: t}
}

// FreeAddr returns a loopback host:port reserved for this test process, for
// programs that must be told their port up front or bind it again after a
// restart (package freeport).
func FreeAddr(t testing.TB) string { return natsserver.FreeAddr(t) }

// BuildCommand compiles a main package of this module (an import path such as
// github.com/a2amesh/a2amesh/cmd/a2a-platform) into a temporary directory and
// returns the binary's path. Tests that kill a process need a real one.
func BuildCommand(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	args := []string{"-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	if err := goBuild(append(args, pkg)...); err != nil {
		t.Fatal(err)
	}
	return bin
}

// Programs are the paths of the three programs of A2A Mesh.
type Programs struct {
	Platform, Runtime, Adapter string
}

// BuildPrograms compiles a2a-platform, a2a-runtime and a2a-adapter into a
// new temporary directory, for a TestMain that builds them once per run.
// They are built without the race detector: the suites check their
// behaviour, and the test binary keeps -race. remove deletes the directory.
func BuildPrograms() (p Programs, remove func(), err error) {
	dir, err := os.MkdirTemp("", "a2a-programs-")
	if err != nil {
		return Programs{}, nil, err
	}
	remove = func() { _ = os.RemoveAll(dir) }
	const module = "github.com/a2amesh/a2amesh/cmd/"
	if err := goBuild("-o", dir+string(filepath.Separator), module+"a2a-platform", module+"a2a-runtime", module+"a2a-adapter"); err != nil {
		remove()
		return Programs{}, nil, err
	}
	return Programs{
		Platform: filepath.Join(dir, "a2a-platform"),
		Runtime:  filepath.Join(dir, "a2a-runtime"),
		Adapter:  filepath.Join(dir, "a2a-adapter"),
	}, remove, nil
}

// RunWithPrograms is a TestMain body for packages that run the programs as
// processes: it builds them into *bins, runs the tests, removes the builds
// and exits with the tests' code.
func RunWithPrograms(m *testing.M, bins *Programs) {
	programs, remove, err := BuildPrograms()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bins = programs
	code := m.Run()
	remove()
	os.Exit(code)
}

// goBuild runs `go build` with args.
func goBuild(args ...string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if out, err := exec.Command(gobin, append([]string{"build"}, args...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Process is `a2a-platform up` running as its own OS process.
type Process struct {
	// Platform drives the process's HTTP API (see Remote).
	*Platform
	Cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// ProcessOptions say how to run `a2a-platform up`.
type ProcessOptions struct {
	DataDir string
	// Args are added after the data dir, HTTP and NATS listen flags.
	Args []string
	// Logs receives the process's stdout and stderr.
	Logs *Logs
}

// StartProcess runs the a2a-platform binary at bin with `up` on fresh
// loopback ports and returns once GET /readyz answers 200. The process is
// killed when the test ends if it is still running.
func StartProcess(t testing.TB, bin string, o ProcessOptions) *Process {
	t.Helper()
	if o.Logs == nil {
		o.Logs = &Logs{}
	}
	httpAddr := FreeAddr(t)
	args := append([]string{"up", "--data-dir", o.DataDir, "--http", httpAddr, "--nats-listen", FreeAddr(t), "--log-level", "debug"}, o.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = o.Logs, o.Logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	pr := &Process{Cmd: cmd, done: make(chan struct{})}
	go func() { pr.err = cmd.Wait(); close(pr.done) }()
	t.Cleanup(func() { pr.Kill(t) })
	base := "http://" + httpAddr
	Eventually(t, 30*time.Second, func() bool {
		select {
		case <-pr.done:
			t.Fatalf("a2a-platform exited before it was ready: %v\n%s", pr.err, o.Logs.String())
		default:
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { return "a2a-platform never became ready:\n" + o.Logs.String() })
	token, err := platform.ReadOwnerToken(platform.OwnerTokenPath(o.DataDir))
	if err != nil {
		t.Fatalf("owner token: %v", err)
	}
	pr.Platform = Remote(t, base, token)
	pr.Platform.DataDir, pr.Platform.Logs = o.DataDir, o.Logs
	return pr
}

// Kill sends SIGKILL (kill -9: no shutdown code runs) and waits for the
// process to be gone.
func (pr *Process) Kill(t testing.TB) {
	select {
	case <-pr.done:
		return
	default:
	}
	if err := pr.Cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("kill a2a-platform: %v", err)
	}
	select {
	case <-pr.done:
	case <-time.After(10 * time.Second):
		t.Errorf("a2a-platform did not exit after SIGKILL")
	}
}

// Exited reports how the process ended, or an error if it is still running.
func (pr *Process) Exited() (*os.ProcessState, error) {
	select {
	case <-pr.done:
		return pr.Cmd.ProcessState, nil
	default:
		return nil, fmt.Errorf("process %d is still running", pr.Cmd.Process.Pid)
	}
}

// LogLine returns the first JSON log line of a program's output whose
// message is msg, or nil.
func LogLine(output, msg string) map[string]any {
	sc := bufio.NewScanner(strings.NewReader(output))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["message"] == msg {
			return line
		}
	}
	return nil
}
