package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// DefaultKillGrace is how long a host process group has between SIGINT and
// SIGKILL when a task is stopped: enough for a CLI agent to save its state
// and exit cleanly.
const DefaultKillGrace = 5 * time.Second

// stderrTailBytes is how much of a failed host's stderr the failure reply
// quotes: its last words are usually the reason.
const stderrTailBytes = 2 << 10

// maxProgressLine bounds one stderr line handed to Process.StderrLine; the
// rest of an overlong line is dropped.
const maxProgressLine = 4 << 10

// groupPollInterval is how often a stopping process group is checked for
// survivors. The processes are not all our children, so there is no event
// to wait on.
const groupPollInterval = 20 * time.Millisecond

// pipeDrainTimeout bounds the wait for a host's pipes to close once its
// process group is gone. Only a process that left the group (setsid) can
// keep them open.
const pipeDrainTimeout = time.Second

// Process is a host process to run with RunProcess.
type Process struct {
	// Path is the executable; it must be absolute or contain a slash, since
	// a relative path would be resolved against Dir.
	Path string
	// Args is the full argv, Args[0] included.
	Args []string
	// Dir is the working directory.
	Dir string
	// Env is the whole environment of the process.
	Env []string
	// Stdin, when set, is copied to the process's stdin, which is then
	// closed.
	Stdin io.Reader
	// Stdout, when set, receives the process's stdout.
	Stdout io.Writer
	// StderrLine, when set, is called with each stderr line (without the
	// line end, at most 4 KiB), from one goroutine.
	StderrLine func(line string)
	// KillGrace is the time between SIGINT and SIGKILL when the process
	// group is stopped. Default DefaultKillGrace.
	KillGrace time.Duration
}

// RunProcess runs p in a process group of its own and returns when the
// process has exited and no process of its group is left: whatever a host
// starts in the background ends with its task. When ctx ends first, the
// group is stopped (SIGINT, then SIGKILL after p.KillGrace) and the error
// wraps ctx.Err(). A non-zero exit gives an *ExitError. On Linux the
// processes that left the group (setsid) are stopped too: those still
// descending from the host, and, once the adapter is a subreaper
// (BecomeSubreaper), those whose parent is already gone.
func RunProcess(ctx context.Context, p Process) error {
	if p.KillGrace <= 0 {
		p.KillGrace = DefaultKillGrace
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("host process not started: %w", err)
	}
	pipes, err := newHostPipes()
	if err != nil {
		return err
	}
	cmd := &exec.Cmd{
		Path:   p.Path,
		Args:   p.Args,
		Dir:    p.Dir,
		Env:    p.Env,
		Stdin:  pipes.stdin.child,
		Stdout: pipes.stdout.child,
		Stderr: pipes.stderr.child,
		// A group of its own lets one signal reach everything the host
		// starts, and keeps a Ctrl-C meant for the adapter from reaching
		// the host directly.
		SysProcAttr: hostProcAttr(),
	}
	err = cmd.Start()
	pipes.closeChildEnds()
	if err != nil {
		pipes.closeOurEnds()
		return fmt.Errorf("start %s: %w", p.Path, err)
	}
	pgid := cmd.Process.Pid
	addHost(pgid)
	defer removeHost(pgid)

	tail := &tailBuffer{max: stderrTailBytes}
	var copying sync.WaitGroup
	copying.Go(func() { feedStdin(pipes.stdin.ours, p.Stdin) })
	copying.Go(func() { drain(p.Stdout, pipes.stdout.ours) })
	copying.Go(func() {
		lines := &lineWriter{fn: p.StderrLine}
		drain(io.MultiWriter(tail, lines), pipes.stderr.ours)
		lines.flush()
	})

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var waitErr error
	stopped := false
	owned := map[int]bool{}
	select {
	case waitErr = <-exited:
		// The host itself is gone; anything it left running goes the same
		// way.
		stopTree(pgid, owned, p.KillGrace)
	case <-ctx.Done():
		stopped = true
		// What the host started is noted before the host is signalled:
		// once it exits, its orphans are no longer its descendants.
		hostTree(pgid, owned)
		stopTree(pgid, owned, p.KillGrace)
		waitErr = <-exited
		// The host may have started more while it was being stopped.
		stopTree(pgid, owned, 0)
	}
	pipes.finish(&copying)

	if stopped {
		return fmt.Errorf("host process stopped: %w", ctx.Err())
	}
	return exitError(waitErr, tail.String())
}

func exitError(waitErr error, stderrTail string) error {
	if waitErr == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) {
		return fmt.Errorf("wait for host process: %w", waitErr)
	}
	out := &ExitError{Code: ee.ExitCode(), StderrTail: stderrTail}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		out.Signal = ws.Signal()
	}
	return out
}

// stopTree stops everything the host pgid started: its process group and,
// on Linux, every process owned by the host (see hostTree), including
// those that moved to a session of their own. Each gets SIGINT; whatever
// survives the grace period gets SIGKILL. It returns once they are gone,
// or after treeKillTimeout of SIGKILLs, which only a process stuck in the
// kernel survives.
func stopTree(pgid int, owned map[int]bool, grace time.Duration) {
	gone := func() bool { return hostTree(pgid, owned) == 0 && !groupAlive(pgid) }
	if gone() {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGINT)
	signalOwned(owned, syscall.SIGINT)
	if waitGone(gone, grace) {
		return
	}
	kill := func() bool {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		signalOwned(owned, syscall.SIGKILL)
		return gone()
	}
	waitGone(kill, treeKillTimeout)
}

// treeKillTimeout bounds the wait for killed processes to disappear.
const treeKillTimeout = 5 * time.Second

// waitGone polls gone until it holds or d has passed, and says whether it
// held.
func waitGone(gone func() bool, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(groupPollInterval)
	defer tick.Stop()
	for {
		if gone() {
			return true
		}
		select {
		case <-deadline.C:
			return gone()
		case <-tick.C:
		}
	}
}

// runningHosts are the hosts RunProcess is running: children of this
// process that hostTree must not take for adopted orphans.
var (
	runningHostsMu sync.Mutex
	runningHosts   = map[int]bool{}
	// subreaper is set once this process adopts orphans (BecomeSubreaper).
	subreaper atomic.Bool
)

func addHost(pid int) {
	runningHostsMu.Lock()
	defer runningHostsMu.Unlock()
	runningHosts[pid] = true
}

func removeHost(pid int) {
	runningHostsMu.Lock()
	defer runningHostsMu.Unlock()
	delete(runningHosts, pid)
}

func runningHost(pid int) bool {
	runningHostsMu.Lock()
	defer runningHostsMu.Unlock()
	return runningHosts[pid]
}

// groupAlive reports whether any process of the group still exists. Signal 0
// checks without delivering anything; ESRCH means the group is empty.
func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// pipePair is one standard stream: the end the host gets and ours.
type pipePair struct{ child, ours *os.File }

// hostPipes are the host's stdin, stdout and stderr. They are plain pipes
// rather than the ones exec.Cmd makes so that reading them never holds up
// the wait for the host's exit, and so they can be cut with a deadline when a
// process outside the group keeps them open.
type hostPipes struct{ stdin, stdout, stderr pipePair }

func newHostPipes() (*hostPipes, error) {
	var h hostPipes
	for i, pair := range []*pipePair{&h.stdin, &h.stdout, &h.stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			h.closeChildEnds()
			h.closeOurEnds()
			return nil, fmt.Errorf("create pipe for host process: %w", err)
		}
		if i == 0 {
			pair.child, pair.ours = r, w
		} else {
			pair.child, pair.ours = w, r
		}
	}
	return &h, nil
}

func (h *hostPipes) pairs() []*pipePair { return []*pipePair{&h.stdin, &h.stdout, &h.stderr} }

// closeChildEnds closes our copies of the host's ends, so that our reads see
// EOF once the host's processes are gone.
func (h *hostPipes) closeChildEnds() {
	for _, p := range h.pairs() {
		if p.child != nil {
			p.child.Close()
		}
	}
}

func (h *hostPipes) closeOurEnds() {
	for _, p := range h.pairs() {
		if p.ours != nil {
			p.ours.Close()
		}
	}
}

// finish waits for the copying goroutines, cutting the pipes after
// pipeDrainTimeout, so that no callback runs after RunProcess returns.
func (h *hostPipes) finish(copying *sync.WaitGroup) {
	done := make(chan struct{})
	go func() {
		copying.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(pipeDrainTimeout):
		for _, p := range h.pairs() {
			_ = p.ours.SetDeadline(time.Now())
		}
		<-done
	}
	h.closeOurEnds()
}

func feedStdin(w *os.File, r io.Reader) {
	if r != nil {
		// A host that never reads stdin makes this fail; that is its choice.
		_, _ = io.Copy(w, r)
	}
	w.Close()
}

// drain copies the host's output to w until the pipe closes. It keeps
// reading when w is nil or fails, so a host never blocks on a full pipe.
func drain(w io.Writer, r io.Reader) {
	if w == nil {
		w = io.Discard
	}
	_, err := io.Copy(w, r)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
		_, _ = io.Copy(io.Discard, r)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

// Write keeps the end of p; it never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the tail, starting at a character boundary and trimmed.
func (t *tailBuffer) String() string {
	b := t.buf
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
}

// lineWriter calls fn with each complete line written to it, dropping what
// exceeds maxProgressLine.
type lineWriter struct {
	fn   func(string)
	line []byte
	over bool
}

// Write hands each completed line to fn; it never fails.
func (l *lineWriter) Write(p []byte) (int, error) {
	if l.fn != nil {
		splitLines(p, l.add, l.flush)
	}
	return len(p), nil
}

// splitLines hands p to add piece by piece, calling end after each piece
// that completes a line; the line end itself is not handed over.
func splitLines(p []byte, add func([]byte), end func()) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			add(p)
			return
		}
		add(p[:i])
		end()
		p = p[i+1:]
	}
}

func (l *lineWriter) add(p []byte) {
	room := maxProgressLine - len(l.line)
	if len(p) > room {
		p, l.over = p[:room], true
	}
	l.line = append(l.line, p...)
}

// flush hands over the pending line, if any.
func (l *lineWriter) flush() {
	if l.fn == nil || (len(l.line) == 0 && !l.over) {
		return
	}
	line := strings.TrimSuffix(string(l.line), "\r")
	l.line, l.over = l.line[:0], false
	l.fn(line)
}
