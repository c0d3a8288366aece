package meshtest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	natsServerOnce sync.Once
	natsServerBin  string
	natsServerErr  error
)

// NATSServerBinary builds the nats-server program of the version this module
// requires, once per test process, and returns its path.
func NATSServerBinary(t testing.TB) string {
	t.Helper()
	natsServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "a2a-nats-server-")
		if err != nil {
			natsServerErr = err
			return
		}
		natsServerBin = filepath.Join(dir, "nats-server")
		natsServerErr = goBuild("-o", natsServerBin, "github.com/nats-io/nats-server/v2")
	})
	if natsServerErr != nil {
		t.Fatal(natsServerErr)
	}
	return natsServerBin
}

// NATSServer is a nats-server process.
type NATSServer struct {
	Cmd  *exec.Cmd
	Logs *Logs
	done chan struct{}
}

// StartNATSServer runs nats-server with a configuration file (one of
// deploy/nats, as shipped) and the environment it reads, and returns once
// the client address accepts connections. It is killed when the test ends.
func StartNATSServer(t testing.TB, conf string, env map[string]string, clientAddr string) *NATSServer {
	t.Helper()
	cmd := exec.Command(NATSServerBinary(t), "-c", conf)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	s := &NATSServer{Cmd: cmd, Logs: &Logs{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.Logs, s.Logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nats-server: %v", err)
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
	})
	Eventually(t, 20*time.Second, func() bool {
		select {
		case <-s.done:
			t.Fatalf("nats-server exited:\n%s", s.Logs.String())
		default:
		}
		c, err := net.Dial("tcp", clientAddr)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}, func() string { return "nats-server never listened:\n" + s.Logs.String() })
	return s
}
