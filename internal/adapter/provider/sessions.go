package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// SessionStore remembers, per conversation, the id of the agent host's own
// session, so that the next task of a conversation resumes it (optional
// session persistence, seed 001 §8.3). The platform's task runs stay the
// record of what happened; a host session is only the host's context.
//
// The store is one small JSON file per provider in the adapter's state
// directory (sessions-<provider>.json), private to the user (0600), replaced
// atomically on every change and locked, so that two adapters sharing a
// state directory never lose each other's entries.
type SessionStore struct {
	path string
	mu   sync.Mutex
}

// sessionFile is the store's file format.
type sessionFile struct {
	Sessions map[string]sessionEntry `json:"sessions"`
}

type sessionEntry struct {
	SessionID string    `json:"session_id"`
	UpdatedAt time.Time `json:"updated_at"`
}

// OpenSessionStore returns the session store of provider in dir, creating
// dir (0700) if needed. The file itself is created by the first Put.
func OpenSessionStore(dir, provider string) (*SessionStore, error) {
	if dir == "" || provider == "" {
		return nil, errors.New("session store: state directory and provider are required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	return &SessionStore{path: filepath.Join(dir, "sessions-"+provider+".json")}, nil
}

// Path returns the store's file.
func (s *SessionStore) Path() string { return s.path }

// Get returns the host session remembered for conversationID, or "" when
// there is none.
func (s *SessionStore) Get(conversationID string) (string, error) {
	var id string
	err := s.locked(false, func(f *sessionFile) bool {
		id = f.Sessions[conversationID].SessionID
		return false
	})
	return id, err
}

// Put remembers sessionID as the host session of conversationID.
func (s *SessionStore) Put(conversationID, sessionID string) error {
	return s.locked(true, func(f *sessionFile) bool {
		if f.Sessions[conversationID].SessionID == sessionID {
			return false
		}
		f.Sessions[conversationID] = sessionEntry{SessionID: sessionID, UpdatedAt: time.Now().UTC()}
		return true
	})
}

// Forget drops the host session of conversationID, so that the
// conversation's next task starts a new one.
func (s *SessionStore) Forget(conversationID string) error {
	return s.locked(true, func(f *sessionFile) bool {
		if _, ok := f.Sessions[conversationID]; !ok {
			return false
		}
		delete(f.Sessions, conversationID)
		return true
	})
}

// locked reads the file under the lock, calls change, and writes the file
// back when change reports a change.
func (s *SessionStore) locked(write bool, change func(*sessionFile) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lockFile(write)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	if !change(f) {
		return nil
	}
	return s.write(f)
}

// lockFile takes an advisory lock on the store's lock file, shared for
// reading and exclusive for writing, against other adapter processes.
func (s *SessionStore) lockFile(write bool) (func(), error) {
	lf, err := os.OpenFile(s.path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	how := syscall.LOCK_SH
	if write {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(lf.Fd()), how); err != nil {
		lf.Close()
		return nil, fmt.Errorf("session store: lock %s: %w", lf.Name(), err)
	}
	return func() {
		_ = syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
		lf.Close()
	}, nil
}

func (s *SessionStore) read() (*sessionFile, error) {
	f := &sessionFile{}
	b, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("session store: %w", err)
	default:
		if err := json.Unmarshal(b, f); err != nil {
			return nil, fmt.Errorf("session store %s is not valid JSON (delete it to start over): %w", s.path, err)
		}
	}
	if f.Sessions == nil {
		f.Sessions = map[string]sessionEntry{}
	}
	return f, nil
}

// write replaces the file atomically: a reader sees the old content or the
// new, never a part.
func (s *SessionStore) write(f *sessionFile) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".sessions-*.tmp")
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails, as it should, once renamed
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("session store: %w", err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("session store: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("session store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	return nil
}
