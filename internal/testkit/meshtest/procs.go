package meshtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Procs are the programs a deployment test started, with the
// credentials to hide in what they print: each is killed when the test
// ends, and their output can be shown masked when it fails.
type Procs struct {
	t       testing.TB
	mu      sync.Mutex
	list    []*Proc
	secrets Secrets
}

// Proc is one program a test started.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Logs Logs
	done chan struct{}
}

// NewProcs starts an empty set for t.
func NewProcs(t testing.TB) *Procs { return &Procs{t: t} }

// Start runs bin with args, the test's environment and env added; its
// output goes to the process's Logs.
func (ps *Procs) Start(name string, env []string, bin string, args ...string) *Proc {
	ps.t.Helper()
	p := &Proc{Name: name, done: make(chan struct{})}
	p.Cmd = exec.Command(bin, args...)
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = &p.Logs, &p.Logs
	if err := p.Cmd.Start(); err != nil {
		ps.t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.Cmd.Wait(); close(p.done) }()
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	ps.t.Cleanup(func() {
		_ = p.Cmd.Process.Kill()
		<-p.done
	})
	return p
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// All returns the processes started so far, in order.
func (ps *Procs) All() []*Proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]*Proc(nil), ps.list...)
}

// WaitLogged waits until every process started so far has printed text (a
// program's own word that it is ready, say), and fails the test when one
// exits before it does or the timeout passes.
func (ps *Procs) WaitLogged(timeout time.Duration, text string) {
	ps.t.Helper()
	for _, p := range ps.All() {
		Eventually(ps.t, timeout, func() bool {
			return strings.Contains(p.Logs.String(), text) || p.Exited()
		}, func() string {
			return p.Name + " never printed " + strconv.Quote(text) + ":\n" + ps.Mask(Tail(p.Logs.String(), 4000))
		})
		if !strings.Contains(p.Logs.String(), text) {
			ps.t.Fatalf("%s exited before it printed %q:\n%s", p.Name, text, ps.Mask(Tail(p.Logs.String(), 4000)))
		}
	}
}

// Secret records credentials that Mask hides.
func (ps *Procs) Secret(secrets ...string) { ps.secrets.Add(secrets...) }

// Mask replaces every recorded credential in text.
func (ps *Procs) Mask(text string) string { return ps.secrets.Mask(text) }

// StartAdapter runs the a2a-adapter at bin with the command provider and
// a shell script of body, waits until it listens, and returns its run-task
// URL. queueSize 0 keeps the adapter's default.
func (ps *Procs) StartAdapter(bin, body string, queueSize int) string {
	ps.t.Helper()
	path := filepath.Join(ps.t.TempDir(), "agent.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		ps.t.Fatal(err)
	}
	args := []string{"--provider", "command", "--listen", "127.0.0.1:0",
		"--workdir", filepath.Join(ps.t.TempDir(), "work"), "--log-level", "info"}
	if queueSize > 0 {
		args = append(args, "--queue-size", strconv.Itoa(queueSize))
	}
	p := ps.Start("adapter", []string{"HOME=" + ps.t.TempDir()}, bin, append(args, "--", path)...)
	re := regexp.MustCompile(`listening on (http://\S+)`)
	var m []string
	Eventually(ps.t, 20*time.Second, func() bool {
		m = re.FindStringSubmatch(p.Logs.String())
		return m != nil || p.Exited()
	}, func() string { return "the adapter never listened:\n" + p.Logs.String() })
	if m == nil {
		ps.t.Fatalf("the adapter exited:\n%s", p.Logs.String())
	}
	return m[1] + "/run-task"
}

// Tail is the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
