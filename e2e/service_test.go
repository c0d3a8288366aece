package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/meshtest"
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
	want := []string{"--user daemon-reload", "--user try-restart " + name, "--user enable --now " + name}
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
