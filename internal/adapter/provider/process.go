package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/a2amesh/a2amesh/internal/adapter/keeper"
)

// DefaultKillGrace is how long a host's processes have between SIGINT and
// SIGKILL when a task is stopped: enough for a CLI agent to save its state
// and exit cleanly.
const DefaultKillGrace = 5 * time.Second

// stderrTailBytes is how much of a failed host's stderr the failure reply
// quotes: its last words are usually the reason.
const stderrTailBytes = 2 << 10

// maxProgressLine bounds one stderr line handed to Process.StderrLine; the
// rest of an overlong line is dropped.
const maxProgressLine = 4 << 10

// pipeDrainTimeout bounds the wait for a host's pipes to close once its
// keeper is gone. Only a process that escaped the keeper (macOS: an orphan
// in a session of its own) can keep them open.
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
	// and what it started are stopped. Default DefaultKillGrace.
	KillGrace time.Duration
}

// RunProcess runs p under a keeper (see package keeper) and returns when
// the process has exited and no process it started is left: whatever a
// host starts, in the background or in a session of its own (setsid),
// ends with its task. When ctx ends first, the keeper stops them all
// (SIGINT, then SIGKILL after p.KillGrace) and the error wraps ctx.Err().
// Should this process die, the keeper does the same. A non-zero exit gives
// an *ExitError.
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
	k, err := keeper.Start(keeper.Spec{Path: p.Path, Args: p.Args, Dir: p.Dir, Env: p.Env, Grace: p.KillGrace},
		pipes.stdin.child, pipes.stdout.child, pipes.stderr.child)
	pipes.closeChildEnds()
	if err != nil {
		pipes.closeOurEnds()
		return fmt.Errorf("start %s: %w", p.Path, err)
	}

	tail := &tailBuffer{max: stderrTailBytes}
	var copying sync.WaitGroup
	copying.Go(func() { feedStdin(pipes.stdin.ours, p.Stdin) })
	copying.Go(func() { drain(p.Stdout, pipes.stdout.ours) })
	copying.Go(func() {
		lines := &lineWriter{fn: p.StderrLine}
		drain(io.MultiWriter(tail, lines), pipes.stderr.ours)
		lines.flush()
	})

	type ending struct {
		status syscall.WaitStatus
		err    error
	}
	ended := make(chan ending, 1)
	go func() {
		status, err := k.Wait()
		ended <- ending{status, err}
	}()
	var end ending
	stopped := false
	select {
	case end = <-ended:
	case <-ctx.Done():
		stopped = true
		k.Stop()
		end = <-ended
	}
	pipes.finish(&copying)

	switch {
	case stopped:
		return fmt.Errorf("host process stopped: %w", ctx.Err())
	case end.err != nil:
		return fmt.Errorf("run host process: %w", end.err)
	}
	return exitError(end.status, tail.String())
}

// exitError describes how a host ended, or returns nil for a clean exit.
func exitError(ws syscall.WaitStatus, stderrTail string) error {
	if ws.Exited() && ws.ExitStatus() == 0 {
		return nil
	}
	out := &ExitError{Code: ws.ExitStatus(), StderrTail: stderrTail}
	if ws.Signaled() {
		out.Code, out.Signal = -1, ws.Signal()
	}
	return out
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
