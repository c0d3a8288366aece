// Package natsserver runs the real nats-server program, of the version this
// module requires, as a process for tests: a server started from one of
// deploy/nats's configurations as shipped, or the nodes of a cluster. A
// server in its own process is what operators run, and it keeps the server's
// own goroutines out of the race detector's view of the test process (the
// clustered JetStream code of nats-server 2.15.2 has a known data race).
package natsserver

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/freeport"
	"github.com/a2amesh/a2amesh/internal/testkit/syncbuf"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Binary returns the path of the nats-server program of the version this
// module requires, built once per machine into the user's cache folder
// (a2amesh/nats-server-<version>): every test process of a run shares it,
// and nothing is left behind in the temporary folder.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { binary, buildErr = build() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// build builds nats-server unless the cache holds it already. A build goes
// to a file of its own and is renamed into place, so test processes that
// build at once never see a half-written program.
func build() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "a2amesh")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	version := serverVersion(gobin)
	path := filepath.Join(dir, "nats-server-"+version)
	if _, err := os.Stat(path); err == nil && version != unknownVersion {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, "nats-server-build-")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	out, err := exec.Command(gobin, "build", "-o", tmp.Name(), "github.com/nats-io/nats-server/v2").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build nats-server: %v\n%s", err, out)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// unknownVersion names a build whose nats-server version is not known: it
// is built again by every test process.
const unknownVersion = "dev"

// serverVersion is the nats-server module version this module requires
// (from go list, run where the test runs: inside the module), or
// unknownVersion.
func serverVersion(gobin string) string {
	out, err := exec.Command(gobin, "list", "-m", "-f", "{{if .Replace}}{{else}}{{.Version}}{{end}}", "github.com/nats-io/nats-server/v2").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" && !strings.ContainsAny(v, `/\`) {
		return v
	}
	return unknownVersion
}

// Process is a running nats-server.
type Process struct {
	cmd  *exec.Cmd
	logs *syncbuf.Buffer
	done chan struct{}
}

// Start runs nats-server with the configuration file conf and env added to
// its environment, and returns once clientAddr accepts connections. It is
// killed when the test ends.
func Start(t testing.TB, conf string, env map[string]string, clientAddr string) *Process {
	t.Helper()
	cmd := exec.Command(Binary(t), "-c", conf)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &Process{cmd: cmd, logs: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nats-server: %v", err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(p.Kill)
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-p.done:
			t.Fatalf("nats-server exited:\n%s", p.Logs())
		default:
		}
		if c, err := net.Dial("tcp", clientAddr); err == nil {
			c.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server never listened on %s:\n%s", clientAddr, p.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Logs is everything the server printed.
func (p *Process) Logs() string { return p.logs.String() }

// Stop shuts the server down as an operator would (SIGTERM: JetStream
// flushes its files) and waits until it has exited.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.Kill()
	}
}

// Kill ends the server at once (SIGKILL) and waits until it has exited.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Healthy reports whether the server's monitoring endpoint at monitorAddr
// answers /healthz with 200 (JetStream current, where it runs).
func Healthy(monitorAddr string) bool {
	resp, err := http.Get("http://" + monitorAddr + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// FreeAddr returns a loopback host:port reserved for this test process (see
// package freeport for why a closed port-0 listener is not enough).
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
