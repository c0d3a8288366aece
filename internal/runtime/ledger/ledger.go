package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// FileName is the ledger file inside the agent's log directory.
const FileName = "execution-ledger.jsonl"

// Modes: the ledger holds task ids and error messages of the user's agent.
const (
	fileMode = 0o600
	dirMode  = 0o700
)

// DefaultDir is the log base directory under the user's home, ~/.a2a/logs.
// Callers resolve home; the package reads no environment.
func DefaultDir(home string) string {
	return filepath.Join(home, ".a2a", "logs")
}

// Ledger appends to and reads one agent's ledger file. It is safe for
// concurrent use by the goroutines of one process.
type Ledger struct {
	path      string
	agentID   string
	runtimeID string
	secrets   [][]byte
	now       func() time.Time

	// mu serialises writes, and the outbox's read-check-write sequences.
	mu sync.Mutex
	f  *os.File
	// torn is set when the file does not end in a newline (a crash or a
	// failed write cut a line short); the next write starts a new line so
	// that the torn fragment does not corrupt it.
	torn bool
	// buf holds the lines of the write in progress, kept for the next
	// (up to maxKeptBuffer).
	buf []byte
}

// maxKeptBuffer bounds the buffer a ledger keeps between writes: a write
// of larger entries allocates its own.
const maxKeptBuffer = 16 << 10

// New opens, creating when missing, the ledger of agentID under dir
// (normally DefaultDir): dir/<agent_id>/execution-ledger.jsonl. runtimeID is
// recorded on every entry that does not carry its own.
func New(dir, agentID, runtimeID string, opts ...Option) (*Ledger, error) {
	if err := validateAgentID(agentID); err != nil {
		return nil, err
	}
	l := &Ledger{
		path:      filepath.Join(dir, agentID, FileName),
		agentID:   agentID,
		runtimeID: runtimeID,
		now:       time.Now,
	}
	for _, opt := range opts {
		opt(l)
	}
	if err := os.MkdirAll(filepath.Dir(l.path), dirMode); err != nil {
		return nil, fmt.Errorf("create ledger directory: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, fileMode)
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	torn, err := endsTorn(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("check end of ledger %s: %w", l.path, err)
	}
	l.f, l.torn = f, torn
	return l, nil
}

// validateAgentID keeps the agent id a single path element, so a hostile or
// mistaken id cannot place the ledger outside dir.
func validateAgentID(id string) error {
	if err := validateElement(id); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidAgentID, err)
	}
	return nil
}

// validateElement checks that name is a single path element.
func validateElement(name string) error {
	switch {
	case name == "":
		return errors.New("empty")
	case strings.ContainsAny(name, `/\`+"\x00"), strings.Contains(name, ".."), name == ".":
		return fmt.Errorf("%q is not a single path element", name)
	}
	return nil
}

func endsTorn(f *os.File) (bool, error) {
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return false, err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, info.Size()-1); err != nil && err != io.EOF {
		return false, err
	}
	return last[0] != '\n', nil
}

// Path is the ledger file's path.
func (l *Ledger) Path() string {
	return l.path
}

// Append writes each entry as one line, in order, with a single write: the
// lines of entries made together (a run pulled and started) cost one
// system call, and no other writer's line comes between them. TS, AgentID
// and RuntimeID are filled in when empty. Outbox events are refused here:
// they go through AppendPending, MarkDelivered and MarkAbandoned. Append
// does not sync; a crash may lose the last lines, which only the outbox
// cannot afford. An entry refused (no event, a secret in it) writes none of
// them.
func (l *Ledger) Append(entries ...Entry) error {
	for _, e := range entries {
		if e.Event == "" {
			return errorf("entry has no event")
		}
		if e.Event.outboxEvent() {
			return errorf("event %s is written by the outbox methods", e.Event)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.write(false, entries...)
}

// Close closes the file. Appends after Close fail with ErrClosed.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("close ledger %s: %w", l.path, err)
	}
	return nil
}

// write appends the entries as lines with a single write call, so
// concurrent appenders (O_APPEND) never interleave within a line. l.mu must
// be held.
func (l *Ledger) write(sync bool, entries ...Entry) error {
	if l.f == nil {
		return ErrClosed
	}
	if len(entries) == 0 {
		return nil
	}
	lines := l.buf[:0]
	for _, e := range entries {
		var err error
		if lines, err = l.encode(lines, e); err != nil {
			return err
		}
		lines = append(lines, '\n')
	}
	if cap(lines) <= maxKeptBuffer {
		l.buf = lines
	}
	return l.writeLines(sync, string(entries[0].Event), lines)
}

// writeLine appends one encoded line. l.mu must be held.
func (l *Ledger) writeLine(sync bool, line []byte) error {
	if l.f == nil {
		return ErrClosed
	}
	return l.writeLines(sync, "line", append(line, '\n'))
}

// writeLines appends lines (each ending in a newline) with a single write.
// l.mu must be held.
func (l *Ledger) writeLines(sync bool, what string, lines []byte) error {
	if l.torn {
		lines = append([]byte{'\n'}, lines...)
	}
	if _, err := l.f.Write(lines); err != nil {
		// Part of a line may be on disk; start the next one afresh.
		l.torn = true
		return fmt.Errorf("append %s to ledger %s: %w", what, l.path, err)
	}
	l.torn = false
	if sync {
		if err := l.f.Sync(); err != nil {
			return fmt.Errorf("sync ledger %s: %w", l.path, err)
		}
	}
	return nil
}

// encode appends e's line to b, with its defaults filled in; a line that
// would carry a secret is refused.
func (l *Ledger) encode(b []byte, e Entry) ([]byte, error) {
	if e.TS.IsZero() {
		e.TS = l.now()
	}
	e.TS = e.TS.UTC()
	if e.AgentID == "" {
		e.AgentID = l.agentID
	}
	if e.RuntimeID == "" {
		e.RuntimeID = l.runtimeID
	}
	start := len(b)
	b, err := appendEntry(b, &e)
	if err != nil {
		return nil, fmt.Errorf("encode ledger entry %s: %w", e.Event, err)
	}
	if l.containsSecret(b[start:]) {
		return nil, fmt.Errorf("append %s to ledger: %w", e.Event, ErrSecret)
	}
	return b, nil
}

func (l *Ledger) containsSecret(line []byte) bool {
	for _, s := range l.secrets {
		if bytes.Contains(line, s) {
			return true
		}
	}
	return false
}
