package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// File and directory modes: the file holds the runtime token.
const (
	fileMode = 0o600
	dirMode  = 0o700
)

// DefaultPath is the profile file under the user's home directory,
// ~/.a2a/runtime.json. Callers resolve home; the package reads no environment.
func DefaultPath(home string) string {
	return filepath.Join(home, ".a2a", "runtime.json")
}

// Store reads and mutates one profile file. Reads need no lock because every
// write replaces the file atomically; mutations hold a lock file beside it
// (path + ".lock") across read-modify-write, so concurrent runtime processes
// never lose each other's writes. A Store is safe for concurrent use.
type Store struct {
	path string
}

// NewStore returns the store of the profile file at path. Nothing is read or
// created until it is used.
func NewStore(path string) *Store {
	return &Store{path: path}
}

// Path is the profile file's path.
func (s *Store) Path() string {
	return s.path
}

// Load reads the file. A missing file is ErrNoProfiles; a file other users
// can access is ErrInsecureFile; a malformed one is ErrInvalidFile.
func (s *Store) Load() (*File, error) {
	f, err := s.load()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoProfiles, s.path)
	}
	return f, err
}

// Update applies fn to the file under the lock and writes the result
// atomically. A missing file starts empty, so pairing can create it; when fn
// fails nothing is written. fn must not call other methods of the store: the
// lock is not reentrant.
func (s *Store) Update(fn func(*File) error) error {
	if err := s.ensureDir(); err != nil {
		return err
	}
	unlock, err := lockFile(s.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()

	f, err := s.load()
	if errors.Is(err, fs.ErrNotExist) {
		f, err = &File{}, nil
	}
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		return err
	}
	if f.Profiles == nil {
		f.Profiles = map[string]Profile{}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode profile file %s: %w", s.path, err)
	}
	return writeFileAtomic(s.path, append(data, '\n'), fileMode)
}

// Put adds or replaces p and makes it the active profile, as a successful
// pair does.
func (s *Store) Put(p Profile) error {
	return s.Update(func(f *File) error { return f.Put(p) })
}

// Use makes the named profile active.
func (s *Store) Use(name string) error {
	return s.Update(func(f *File) error { return f.Use(name) })
}

// Remove deletes the named profile, clearing active_profile if it was active.
func (s *Store) Remove(name string) error {
	return s.Update(func(f *File) error { return f.Remove(name) })
}

// RecordHeartbeat sets last_heartbeat_at of the named profile without
// touching anything else, in particular not active_profile.
func (s *Store) RecordHeartbeat(name string, at time.Time) error {
	return s.record(name, func(p *Profile) { p.LastHeartbeatAt = at.UTC() })
}

// RecordConnection sets the named profile's connection without touching
// anything else.
func (s *Store) RecordConnection(name string, c Connection) error {
	c.At = c.At.UTC()
	return s.record(name, func(p *Profile) { p.Connection = c })
}

// RecordStopped marks the connection the start with process id pid
// recorded as no longer in use, unless another start recorded its own
// since.
func (s *Store) RecordStopped(name string, pid int) error {
	return s.record(name, func(p *Profile) {
		if p.Connection.PID == pid {
			p.Connection.PID = 0
		}
	})
}

// RecordNATS stores the NATS connection details the platform gives the
// runtime now (its agent's home region may have moved since pairing).
func (s *Store) RecordNATS(name string, n NATS) error {
	return s.record(name, func(p *Profile) { p.NATS = n })
}

// record changes one field of the named profile with set, touching nothing
// else.
func (s *Store) record(name string, set func(*Profile)) error {
	return s.Update(func(f *File) error {
		p, ok := f.Profiles[name]
		if !ok {
			return f.notFound(name, "profile")
		}
		set(&p)
		f.Profiles[name] = p
		return nil
	})
}

// List returns the profile names in sorted order; none when the file is
// missing.
func (s *Store) List() ([]string, error) {
	f, err := s.load()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return f.Names(), nil
}

// Resolve returns the profile to use given the --profile value (may be
// empty), following File.Resolve.
func (s *Store) Resolve(explicit string) (Profile, error) {
	f, err := s.Load()
	if err != nil {
		return Profile{}, err
	}
	p, err := f.Resolve(explicit)
	if errors.Is(err, ErrNoProfiles) {
		return Profile{}, fmt.Errorf("%w in %s", ErrNoProfiles, s.path)
	}
	if err != nil {
		return Profile{}, fmt.Errorf("resolve profile from %s: %w", s.path, err)
	}
	return p, nil
}

// load reads and checks the file; a missing file is fs.ErrNotExist.
func (s *Store) load() (*File, error) {
	fh, err := os.Open(s.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("open profile file: %w", err)
	}
	defer fh.Close()
	// Stat the open file, not the path, so the mode checked is the mode of
	// what is read.
	info, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat profile file: %w", err)
	}
	if err := checkPrivate(s.path, info.Mode()); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(fh)
	if err != nil {
		return nil, fmt.Errorf("read profile file %s: %w", s.path, err)
	}
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrInvalidFile, s.path, err)
	}
	return &f, nil
}

// ensureDir creates the profile directory with mode 0700 when it is missing.
// An existing directory is left as the user set it up.
func (s *Store) ensureDir() error {
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("create profile directory %s: %w", dir, err)
	}
	return nil
}
