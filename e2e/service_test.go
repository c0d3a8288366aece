package e2e

import (
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// `service install` writes a systemd user unit that runs `start --profile
// <name>` and holds no secret, then reloads, restarts and enables it;
// `status` and `uninstall` go through systemctl too. A fake systemctl on
// PATH records its calls.
func TestService_InstallWritesUnitWithoutTokenAndCallsSystemctl(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	m := l.newMachine()
	pr := m.pair(p.Platform, p.CreateAgent("service").ID, "http://127.0.0.1:18794/run-task")

	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	fake := "#!/bin/sh\necho \"$*\" >> '" + calls + "'\ncase \"$*\" in *is-active*) echo active ;; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	fakeCommand(t, bin, "loginctl", "echo \"loginctl $*\" >> '"+calls+"'\n")
	env := append(m.env(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	svc := func(args ...string) result {
		t.Helper()
		res := l.run("a2a-runtime service "+args[0], env, bins.Runtime, append([]string{"service"}, args...)...)
		if res.code != 0 {
			t.Fatalf("service %v: %s", args, res)
		}
		return res
	}
	recorded := func() []string {
		return strings.Split(strings.TrimSpace(meshtest.ReadFile(calls)), "\n")
	}

	svc("install")
	units, _ := filepath.Glob(filepath.Join(m.Home, ".config", "systemd", "user", "a2a-runtime-*.service"))
	if len(units) != 1 {
		t.Fatalf("want one unit file under ~/.config/systemd/user, got %v", units)
	}
	unit := meshtest.ReadFile(units[0])
	name := filepath.Base(units[0])
	if !strings.Contains(unit, "ExecStart="+bins.Runtime+" start --profile "+pr.Name()+" --config "+m.profilePath()) {
		t.Errorf("the unit does not run start --profile %s:\n%s", pr.Name(), unit)
	}
	for _, secret := range []string{pr.Token, pr.Code} {
		if strings.Contains(unit, secret) {
			t.Errorf("the unit file holds a secret:\n%s", unit)
		}
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--user show-environment", "--user daemon-reload", "--user try-restart " + name, "--user enable --now " + name,
		"loginctl enable-linger " + u.Username}
	if got := recorded(); !slices.Equal(got, want) {
		t.Errorf("systemctl calls %q, want %q", got, want)
	}

	if st := svc("status"); !strings.Contains(st.stdout, "installed=true active=true") {
		t.Errorf("service status: %s", st.stdout)
	}
	svc("uninstall")
	if _, err := os.Stat(units[0]); !os.IsNotExist(err) {
		t.Errorf("uninstall left the unit file: %v", err)
	}
	want = append(want, "--user is-active "+name, "--user disable --now "+name, "--user daemon-reload")
	if got := recorded(); !slices.Equal(got, want) {
		t.Errorf("systemctl calls %q, want %q", got, want)
	}
}

// fakeCommand writes an executable sh script named name into dir.
func fakeCommand(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// serviceMachine pairs a machine for the service tests and returns it with
// a bin directory for fake systemctl and loginctl, and the file their calls
// are recorded in.
func serviceMachine(t *testing.T, l *lab, p *platform) (*machine, paired, string, string) {
	t.Helper()
	m := l.newMachine()
	pr := m.pair(p.Platform, p.CreateAgent("service").ID, "http://127.0.0.1:18794/run-task")
	return m, pr, t.TempDir(), filepath.Join(t.TempDir(), "calls")
}

func unitFiles(m *machine) []string {
	units, _ := filepath.Glob(filepath.Join(m.Home, ".config", "systemd", "user", "a2a-runtime-*.service"))
	return units
}

// `service install` carries start's flags into the unit (the adapter the
// runtime supervises among them, with its program as an absolute path),
// and enables lingering so the user service runs without a login session.
func TestService_InstallCarriesStartFlagsAndEnablesLingering(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	m, _, bin, calls := serviceMachine(t, l, p)
	fakeCommand(t, bin, "systemctl", "echo \"systemctl $*\" >> '"+calls+"'\n")
	fakeCommand(t, bin, "loginctl", "echo \"loginctl $*\" >> '"+calls+"'\n")
	env := append(m.env(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	res := l.run("a2a-runtime service install", env, bins.Runtime, "service", "install",
		"--concurrency", "3", "--metrics-listen", "127.0.0.1:9464", "--transport", "http",
		"--adapter", "command", "--adapter-bin", bins.Adapter, "--local-agent-endpoint", "http://127.0.0.1:18795/run-task",
		"--", "--", "/usr/bin/my agent")
	if res.code != 0 {
		t.Fatalf("service install: %s", res)
	}
	units := unitFiles(m)
	if len(units) != 1 {
		t.Fatalf("want one unit file, got %v", units)
	}
	unit := meshtest.ReadFile(units[0])
	for _, want := range []string{" --concurrency 3", " --metrics-listen 127.0.0.1:9464", " --transport http",
		" --adapter command", " --adapter-bin " + bins.Adapter, " --local-agent-endpoint http://127.0.0.1:18795/run-task",
		` -- -- "/usr/bin/my agent"`} {
		if !strings.Contains(unit, want) {
			t.Errorf("the unit lacks %q:\n%s", want, unit)
		}
	}
	if got := meshtest.ReadFile(calls); !strings.Contains(got, "loginctl enable-linger") {
		t.Errorf("lingering was not enabled; calls:\n%s", got)
	}
}

// An adapter chosen at pairing stays in the profile, where the service's
// start finds it: install repeats none of it, and names the adapter program
// by its absolute path, since a service manager does not search PATH.
func TestService_InstallRunsTheAdapterChosenAtPairing(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	m := l.newMachine()
	m.pair(p.Platform, p.CreateAgent("service").ID, "http://127.0.0.1:18796/run-task", "--provider", "claude", "--", "--max-turns", "3")
	bin, calls := t.TempDir(), filepath.Join(t.TempDir(), "calls")
	fakeCommand(t, bin, "systemctl", "echo \"systemctl $*\" >> '"+calls+"'\n")
	fakeCommand(t, bin, "loginctl", "echo \"loginctl $*\" >> '"+calls+"'\n")
	env := append(m.env(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	if res := l.run("a2a-runtime service install", env, bins.Runtime, "service", "install"); res.code != 0 {
		t.Fatalf("service install: %s", res)
	}
	units := unitFiles(m)
	if len(units) != 1 {
		t.Fatalf("want one unit file, got %v", units)
	}
	unit := meshtest.ReadFile(units[0])
	adapter := filepath.Join(filepath.Dir(bins.Runtime), "a2a-adapter")
	if !strings.Contains(unit, " --adapter-bin "+adapter) {
		t.Errorf("the unit does not name the adapter program %s:\n%s", adapter, unit)
	}
	for _, unwanted := range []string{" --adapter ", "--max-turns"} {
		if strings.Contains(unit, unwanted) {
			t.Errorf("the unit repeats %q, which the profile holds:\n%s", unwanted, unit)
		}
	}
}

// Where lingering cannot be enabled, install still works and says plainly
// what that means and who can change it.
func TestService_InstallSaysWhyLingeringIsOff(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	m, _, bin, calls := serviceMachine(t, l, p)
	fakeCommand(t, bin, "systemctl", "echo \"systemctl $*\" >> '"+calls+"'\n")
	fakeCommand(t, bin, "loginctl", "echo 'Could not enable linger: Access denied' >&2; exit 1\n")
	env := append(m.env(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	res := l.run("a2a-runtime service install", env, bins.Runtime, "service", "install")
	if res.code != 0 {
		t.Fatalf("service install: %s", res)
	}
	out := res.stdout + res.stderr
	for _, want := range []string{"Access denied", "log out", "loginctl enable-linger"} {
		if !strings.Contains(out, want) {
			t.Errorf("install output does not say %q:\n%s", want, out)
		}
	}
}

// Without a user bus, without systemctl, or when systemctl fails midway,
// install fails with a message saying what to do, and leaves no unit file.
func TestService_InstallFailsCleanlyWithoutAServiceManager(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	cases := []struct {
		name      string
		systemctl string // "" : none on PATH
		want      []string
	}{
		{"no user bus", "echo 'Failed to connect to bus: No medium found' >&2; exit 1\n",
			[]string{"No medium found", "user service manager", "a2a-runtime start"}},
		{"no systemctl", "", []string{"systemctl", "a2a-runtime start"}},
		{"enable fails", "case \"$*\" in *enable*) echo 'Failed to enable unit' >&2; exit 1 ;; esac\n",
			[]string{"Failed to enable unit"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, _, bin, _ := serviceMachine(t, l, p)
			if tc.systemctl != "" {
				fakeCommand(t, bin, "systemctl", tc.systemctl)
			}
			fakeCommand(t, bin, "loginctl", "exit 0\n")
			res := l.run("a2a-runtime service install", append(m.env(), "PATH="+bin), bins.Runtime, "service", "install")
			if res.code == 0 {
				t.Fatalf("install succeeded: %s", res)
			}
			for _, want := range tc.want {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("install error does not say %q:\n%s", want, res.stderr)
				}
			}
			if units := unitFiles(m); len(units) != 0 {
				t.Errorf("a failed install left %v", units)
			}
		})
	}
}
