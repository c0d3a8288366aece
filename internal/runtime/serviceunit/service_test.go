package serviceunit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/runtime/serviceunit"
)

const (
	testProfile = "agent-1/rt-1"
	testToken   = "rt_secret_token_9f8e7d6c5b4a"
)

func newService(t *testing.T, kind serviceunit.Kind, profile string) (*serviceunit.Service, *fakeRunner, string) {
	t.Helper()
	home := t.TempDir()
	runner := newFakeRunner()
	svc, err := serviceunit.New(serviceunit.Config{
		Kind: kind,
		Spec: serviceunit.Spec{
			Executable:  "/opt/a2a mesh/a2a-runtime",
			Profile:     profile,
			ProfileFile: filepath.Join(home, ".a2a", "runtime.json"),
		},
		Home:   home,
		UID:    501,
		Runner: runner,
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc, runner, home
}

func expectCommands(t *testing.T, r *fakeRunner, want ...string) {
	t.Helper()
	if got := r.issued(); !slices.Equal(got, want) {
		t.Fatalf("commands:\n got %q\nwant %q", got, want)
	}
}

func TestSystemd_InstallStatusUninstall(t *testing.T) {
	ctx := context.Background()
	svc, r, home := newService(t, serviceunit.Systemd, testProfile)
	unit := "a2a-runtime-agent1-rt1.service"
	path := filepath.Join(home, ".config", "systemd", "user", unit)
	if svc.Name() != unit || svc.Path() != path {
		t.Fatalf("name %q path %q", svc.Name(), svc.Path())
	}

	if st, err := svc.Status(ctx); err != nil || st != (serviceunit.Status{}) {
		t.Fatalf("status before install = %+v, %v", st, err)
	}
	expectCommands(t, r)

	if err := svc.Install(ctx); err != nil {
		t.Fatal(err)
	}
	expectCommands(t, r,
		"systemctl --user show-environment",
		"systemctl --user daemon-reload",
		"systemctl --user try-restart "+unit,
		"systemctl --user enable --now "+unit)
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(written) != svc.Text() {
		t.Fatal("written unit differs from Text()")
	}
	assertNamesProfileNotToken(t, string(written), home)

	r.answer("systemctl --user is-active "+unit, "active\n", 0)
	st, err := svc.Status(ctx)
	if err != nil || st != (serviceunit.Status{Installed: true, Active: true, State: "active"}) {
		t.Fatalf("status = %+v, %v", st, err)
	}
	r.answer("systemctl --user is-active "+unit, "failed\n", 3)
	st, err = svc.Status(ctx)
	if err != nil || st != (serviceunit.Status{Installed: true, State: "failed"}) {
		t.Fatalf("status = %+v, %v", st, err)
	}
	expectCommands(t, r, "systemctl --user is-active "+unit, "systemctl --user is-active "+unit)

	if err := svc.Uninstall(ctx); err != nil {
		t.Fatal(err)
	}
	expectCommands(t, r, "systemctl --user disable --now "+unit, "systemctl --user daemon-reload")
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("unit file still there: %v", err)
	}
	if err := svc.Uninstall(ctx); err != nil {
		t.Fatalf("second uninstall: %v", err)
	}
	expectCommands(t, r)
}

func TestSystemd_InstallReportsFailingCommandAndLeavesNoUnit(t *testing.T) {
	svc, r, _ := newService(t, serviceunit.Systemd, testProfile)
	r.answer("systemctl --user enable --now a2a-runtime-agent1-rt1.service", "Failed to enable unit\n", 1)
	err := svc.Install(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Failed to enable unit") {
		t.Fatalf("error = %v, want the command's output", err)
	}
	if _, err := os.Stat(svc.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed install left the unit file: %v", err)
	}
}

func TestSystemd_InstallWithoutUserBusWritesNothing(t *testing.T) {
	svc, r, _ := newService(t, serviceunit.Systemd, testProfile)
	r.answer("systemctl --user show-environment", "Failed to connect to bus: No medium found\n", 1)
	err := svc.Install(context.Background())
	if !errors.Is(err, serviceunit.ErrNoServiceManager) || !strings.Contains(err.Error(), "No medium found") {
		t.Fatalf("error = %v, want ErrNoServiceManager with systemctl's words", err)
	}
	expectCommands(t, r, "systemctl --user show-environment")
	if _, err := os.Stat(svc.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the unit file was written: %v", err)
	}
}

func TestSystemd_EnableLingerSaysWhyNot(t *testing.T) {
	svc, r, _ := newService(t, serviceunit.Systemd, testProfile)
	if err := svc.EnableLinger(context.Background(), "ann"); err != nil {
		t.Fatal(err)
	}
	expectCommands(t, r, "loginctl enable-linger ann")
	r.answer("loginctl enable-linger ann", "Access denied\n", 1)
	err := svc.EnableLinger(context.Background(), "ann")
	if err == nil || !strings.Contains(err.Error(), "Access denied") || !strings.Contains(err.Error(), "sudo loginctl enable-linger ann") {
		t.Fatalf("error = %v, want the reason and the command that allows it", err)
	}
}

func TestLaunchd_InstallStatusUninstall(t *testing.T) {
	ctx := context.Background()
	svc, r, home := newService(t, serviceunit.Launchd, testProfile)
	label := "dev.a2amesh.runtime.agent1-rt1"
	target := "gui/501/" + label
	path := filepath.Join(home, "Library", "LaunchAgents", label+".plist")
	if svc.Name() != label || svc.Path() != path {
		t.Fatalf("name %q path %q", svc.Name(), svc.Path())
	}
	r.answer("launchctl print "+target, "Could not find service\n", 113)

	if err := svc.Install(ctx); err != nil {
		t.Fatal(err)
	}
	expectCommands(t, r,
		"launchctl print "+target,
		"launchctl enable "+target,
		"launchctl bootstrap gui/501 "+path)
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	assertNamesProfileNotToken(t, string(written), home)
	if info, err := os.Stat(filepath.Join(home, ".a2a", "logs")); err != nil || !info.IsDir() {
		t.Fatalf("log directory not created: %v", err)
	}

	r.answer("launchctl print "+target, "gui/501/"+label+" = {\n\tactive count = 1\n\tstate = running\n}\n", 0)
	st, err := svc.Status(ctx)
	if err != nil || st != (serviceunit.Status{Installed: true, Active: true, State: "running"}) {
		t.Fatalf("status = %+v, %v", st, err)
	}
	expectCommands(t, r, "launchctl print "+target)

	// Reinstalling a loaded agent boots the old one out first.
	if err := svc.Install(ctx); err != nil {
		t.Fatal(err)
	}
	expectCommands(t, r,
		"launchctl print "+target,
		"launchctl bootout "+target,
		"launchctl enable "+target,
		"launchctl bootstrap gui/501 "+path)

	if err := svc.Uninstall(ctx); err != nil {
		t.Fatal(err)
	}
	expectCommands(t, r, "launchctl print "+target, "launchctl bootout "+target)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("plist still there: %v", err)
	}

	r.answer("launchctl print "+target, "Could not find service\n", 113)
	st, err = svc.Status(ctx)
	if err != nil || st != (serviceunit.Status{State: "not loaded"}) {
		t.Fatalf("status after uninstall = %+v, %v", st, err)
	}
}

func TestInstall_RefusesFileOfAnotherProfileWithSameShortName(t *testing.T) {
	for _, kind := range []serviceunit.Kind{serviceunit.Systemd, serviceunit.Launchd} {
		t.Run(string(kind), func(t *testing.T) {
			ctx := context.Background()
			home := t.TempDir()
			install := func(profile string) error {
				svc, err := serviceunit.New(serviceunit.Config{
					Kind:   kind,
					Spec:   serviceunit.Spec{Executable: "/bin/a2a-runtime", Profile: profile},
					Home:   home,
					Runner: newFakeRunner(),
				})
				if err != nil {
					t.Fatal(err)
				}
				return svc.Install(ctx)
			}
			if err := install("agent-0001/runtime-0001"); err != nil {
				t.Fatal(err)
			}
			if err := install("agent-0001/runtime-0001"); err != nil {
				t.Fatalf("reinstalling the same profile: %v", err)
			}
			if err := install("agent-0002/runtime-0002"); !errors.Is(err, serviceunit.ErrNameConflict) {
				t.Fatalf("installing a colliding profile: error = %v, want ErrNameConflict", err)
			}
			if err := install("agent-0001/runtime-000"); !errors.Is(err, serviceunit.ErrNameConflict) {
				t.Fatalf("installing a profile whose name is a prefix: error = %v, want ErrNameConflict", err)
			}
		})
	}
}

func TestNew_Rejects(t *testing.T) {
	spec := serviceunit.Spec{Executable: "/bin/a2a-runtime", Profile: "a/r"}
	if _, err := serviceunit.New(serviceunit.Config{Kind: "upstart", Spec: spec, Home: "/h"}); !errors.Is(err, serviceunit.ErrUnsupported) {
		t.Errorf("unknown kind: error = %v", err)
	}
	if _, err := serviceunit.New(serviceunit.Config{Kind: serviceunit.Systemd, Spec: spec}); !errors.Is(err, serviceunit.ErrInvalidSpec) {
		t.Errorf("no home: error = %v", err)
	}
}

func assertNamesProfileNotToken(t *testing.T, text, home string) {
	t.Helper()
	if !strings.Contains(text, testProfile) {
		t.Errorf("service file does not name the profile:\n%s", text)
	}
	if !strings.Contains(text, filepath.Join(home, ".a2a", "runtime.json")) {
		t.Errorf("service file does not name the profile file:\n%s", text)
	}
	for _, secret := range []string{testToken, "runtime_token"} {
		if strings.Contains(text, secret) {
			t.Errorf("service file contains %q:\n%s", secret, text)
		}
	}
}
