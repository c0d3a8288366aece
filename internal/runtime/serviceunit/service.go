package serviceunit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/a2amesh/a2amesh/internal/runtime/ledger"
)

// Kind is a user service manager.
type Kind string

// Supported service managers.
const (
	Systemd Kind = "systemd"
	Launchd Kind = "launchd"
)

// KindFor returns the service manager of an operating system, as named by
// runtime.GOOS.
func KindFor(goos string) (Kind, error) {
	switch goos {
	case "linux":
		return Systemd, nil
	case "darwin":
		return Launchd, nil
	}
	return "", fmt.Errorf("%w on %s", ErrUnsupported, goos)
}

// Config describes the service to manage.
type Config struct {
	// Kind is the service manager; see KindFor.
	Kind Kind
	// Spec is the command the service runs.
	Spec Spec
	// Home is the user's home directory, under which the service file and,
	// for launchd, the log files go.
	Home string
	// UID is the user's id, naming the launchd gui/<uid> domain.
	UID int
	// Runner runs systemctl or launchctl; default ExecRunner.
	Runner Runner
}

// Status is what the service manager says about the service.
type Status struct {
	// Installed is whether the service file exists.
	Installed bool `json:"installed"`
	// Active is whether the runtime is running now.
	Active bool `json:"active"`
	// State is the manager's own word: systemctl is-active output
	// ("active", "inactive", "failed", ...) or launchd's state ("running",
	// "not running", "not loaded"); empty when not installed under systemd.
	State string `json:"state,omitempty"`
}

// Service is one profile's runtime service.
type Service struct {
	name string
	path string
	text string
	mgr  manager
}

// manager is the part that differs between service managers.
type manager interface {
	install(ctx context.Context) error
	linger(ctx context.Context, user string) error
	uninstall(ctx context.Context) error
	status(ctx context.Context) (Status, error)
}

// New describes the service of cfg; nothing is written until Install.
func New(cfg Config) (*Service, error) {
	if cfg.Home == "" {
		return nil, fmt.Errorf("%w: no home directory", ErrInvalidSpec)
	}
	if cfg.Runner == nil {
		cfg.Runner = ExecRunner{}
	}
	switch cfg.Kind {
	case Systemd:
		return newSystemd(cfg)
	case Launchd:
		return newLaunchd(cfg)
	}
	return nil, fmt.Errorf("%w: %q", ErrUnsupported, cfg.Kind)
}

func newSystemd(cfg Config) (*Service, error) {
	text, err := SystemdUnit(cfg.Spec)
	if err != nil {
		return nil, err
	}
	name, _ := UnitName(cfg.Spec.Profile)
	path, _ := UnitPath(cfg.Home, cfg.Spec.Profile)
	m := &systemd{spec: cfg.Spec, name: name, path: path, text: text, run: cfg.Runner}
	return &Service{name: name, path: path, text: text, mgr: m}, nil
}

func newLaunchd(cfg Config) (*Service, error) {
	label, err := Label(cfg.Spec.Profile)
	if err != nil {
		return nil, err
	}
	logDir := ledger.DefaultDir(cfg.Home)
	text, err := LaunchdPlist(cfg.Spec, label, logDir)
	if err != nil {
		return nil, err
	}
	path, _ := PlistPath(cfg.Home, cfg.Spec.Profile)
	m := &launchd{spec: cfg.Spec, label: label, path: path, text: text, logDir: logDir, uid: cfg.UID, run: cfg.Runner}
	return &Service{name: label, path: path, text: text, mgr: m}, nil
}

// Name is the systemd unit name or the launchd label.
func (s *Service) Name() string { return s.name }

// Path is the service file's path.
func (s *Service) Path() string { return s.path }

// Text is the service file's content.
func (s *Service) Text() string { return s.text }

// Install writes the service file and starts the service now and at every
// login. Reinstalling replaces the file and restarts a running service. A
// file generated for another profile is not overwritten (ErrNameConflict).
func (s *Service) Install(ctx context.Context) error { return s.mgr.install(ctx) }

// EnableLinger lets the user's services run without a login session, so
// the service keeps running after logout and starts at boot (systemd's
// loginctl enable-linger; launchd agents need nothing). The error says why
// it could not be done; the service is installed either way.
func (s *Service) EnableLinger(ctx context.Context, user string) error {
	return s.mgr.linger(ctx, user)
}

// Uninstall stops the service, disables it and removes its file. An absent
// service is not an error.
func (s *Service) Uninstall(ctx context.Context) error { return s.mgr.uninstall(ctx) }

// Status asks the service manager whether the service runs.
func (s *Service) Status(ctx context.Context) (Status, error) { return s.mgr.status(ctx) }

// writeServiceFile writes text to path unless path holds a service file that
// contains none of markers, which identify the profile it runs: short names
// can collide and one profile must not take over another's service.
// It returns undo, which puts back what was there before (the earlier file,
// or none), so a failed install leaves no half-installed service.
func writeServiceFile(path, text string, markers []string) (undo func(), err error) {
	existing, err := os.ReadFile(path)
	had := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read existing service file: %w", err)
	case !containsAny(string(existing), markers):
		return nil, fmt.Errorf("%w: %s", ErrNameConflict, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create service directory: %w", err)
	}
	// The file names a profile but holds no secret; service managers and
	// the user's tools read it.
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return nil, fmt.Errorf("write service file: %w", err)
	}
	return func() {
		if had {
			_ = os.WriteFile(path, existing, 0o644)
		} else {
			_ = os.Remove(path)
		}
	}, nil
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stat service file: %w", err)
	}
	return true, nil
}
