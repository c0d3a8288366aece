package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// statusProfile runs status --json with args and returns the profile name
// it reports.
func statusProfile(t *testing.T, m *machine, args ...string) string {
	t.Helper()
	res := m.cli(append([]string{"status", "--json"}, args...)...)
	if res.code != 0 {
		t.Fatalf("status %v: %s", args, res)
	}
	var st struct {
		Profile struct {
			Name string `json:"profile_name"`
		} `json:"profile"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, res.stdout)
	}
	return st.Profile.Name
}

// Seed 000: with several profiles the runtime uses --profile, then
// active_profile, and never guesses; `start` talks to the api_base stored at
// pairing when --api-base is omitted.
func TestProfiles_ProfileFlagThenActiveProfileAndNeverAGuess(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	ad := l.startAdapter("echo")
	m := l.newMachine()
	first := m.pair(p.Platform, p.CreateAgent("first").ID, ad.Endpoint)
	second := m.pair(p.Platform, p.CreateAgent("second").ID, ad.Endpoint)

	if f := m.profileFile(); f.ActiveProfile != second.Name() || len(f.Profiles) != 2 {
		t.Fatalf("after two pairings: active %q, %d profiles; want the second active of two", f.ActiveProfile, len(f.Profiles))
	}
	if got := statusProfile(t, m); got != second.Name() {
		t.Errorf("status uses %s, want the active profile %s", got, second.Name())
	}
	if got := statusProfile(t, m, "--profile", first.Name()); got != first.Name() {
		t.Errorf("status --profile uses %s, want %s", got, first.Name())
	}
	list := m.cli("profiles", "list")
	if !strings.Contains(list.stdout, "* "+second.Name()) || !strings.Contains(list.stdout, "  "+first.Name()) {
		t.Errorf("profiles list does not mark the active profile:\n%s", list.stdout)
	}

	// start: the active profile, over HTTP to the api_base stored at pairing.
	rt := m.startRuntime("--transport", "http")
	waitOnline(t, p.Platform, second.AgentID, second.RuntimeID)
	if v := p.RuntimeView(t, first.AgentID, first.RuntimeID); v.Status == mesh.PresenceOnline {
		t.Errorf("the profile that is not active went online")
	}
	done := waitEnded(t, p.Platform, p.CreateTask(second.AgentID, "to the active one").ID, mesh.StatusCompleted, waitStart)
	if done.RuntimeID != second.RuntimeID {
		t.Errorf("run done by %s, want %s", done.RuntimeID, second.RuntimeID)
	}
	rt.kill()
	// --profile overrides active_profile for start too.
	rt = m.startRuntime("--profile", first.Name(), "--transport", "http")
	waitOnline(t, p.Platform, first.AgentID, first.RuntimeID)
	// --api-base overrides the stored one: a wrong one cannot connect.
	wrong := m.spawnRuntime("--transport", "http", "--api-base", "http://"+meshtest.FreeAddr(t))
	if code := wrong.waitExit(t, waitStart); code == 0 || code == 3 {
		t.Errorf("start with an unreachable --api-base exited %d, want a connection error", code)
	}

	// Two profiles, none active: no guess, both names listed. (The running
	// runtime records heartbeats in the file; it must not write it back.)
	rt.kill()
	m.editProfileFile(func(f map[string]any) { delete(f, "active_profile") })
	for _, cmd := range [][]string{{"status"}, {"start", "--transport", "http"}} {
		res := m.cli(cmd...)
		if res.code == 0 {
			t.Errorf("%v with two profiles and none active succeeded: %s", cmd, res)
		}
		for _, name := range []string{first.Name(), second.Name(), "--profile"} {
			if !strings.Contains(res.stderr, name) {
				t.Errorf("%v does not mention %s:\n%s", cmd, name, res.stderr)
			}
		}
	}
	if use := m.cli("profiles", "use", first.Name()); use.code != 0 || m.profileFile().ActiveProfile != first.Name() {
		t.Errorf("profiles use: %s", use)
	}
}

// A profile file other users can read is refused with an error that names
// the file and the fix; nothing connects with it.
func TestProfiles_FileReadableByOthersIsRefusedNamingTheFile(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	m := l.newMachine()
	pr := m.pair(p.Platform, p.CreateAgent("perm").ID, "http://127.0.0.1:18793/run-task")
	if err := os.Chmod(m.profilePath(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"status"}, {"start"}, {"profiles", "list"}} {
		res := m.cli(cmd...)
		if res.code == 0 {
			t.Errorf("%v with a 0644 profile file succeeded: %s", cmd, res)
		}
		if !strings.Contains(res.stderr, m.profilePath()) || !strings.Contains(res.stderr, "chmod 600") {
			t.Errorf("%v does not name the file and the fix:\n%s", cmd, res.stderr)
		}
		if strings.Contains(res.stdout+res.stderr, pr.Token) {
			t.Errorf("%v printed the token", cmd)
		}
	}
	if v := p.RuntimeView(t, pr.AgentID, pr.RuntimeID); v.Status == mesh.PresenceOnline {
		t.Errorf("a runtime went online with an insecure profile file")
	}
}

// `unpair` revokes the runtime on the platform and removes its profile,
// leaving the other profiles and clearing active_profile.
func TestProfiles_UnpairRevokesOnThePlatformAndRemovesTheProfile(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	m := l.newMachine()
	keep := m.pair(p.Platform, p.CreateAgent("keep").ID, "http://127.0.0.1:18795/run-task")
	gone := m.pair(p.Platform, p.CreateAgent("gone").ID, "http://127.0.0.1:18795/run-task")

	res := m.cli("unpair")
	if res.code != 0 || !strings.Contains(res.stdout, "revoked on the platform") {
		t.Fatalf("unpair: %s", res)
	}
	if v := p.RuntimeView(t, gone.AgentID, gone.RuntimeID); v.State != mesh.RuntimeRevoked {
		t.Errorf("the unpaired runtime is %s on the platform, want revoked", v.State)
	}
	f := m.profileFile()
	if _, ok := f.Profiles[gone.Name()]; ok || f.ActiveProfile != "" {
		t.Errorf("after unpair: active %q, profiles %v", f.ActiveProfile, f.names())
	}
	if _, ok := f.Profiles[keep.Name()]; !ok {
		t.Errorf("unpair removed another profile")
	}
	if strings.Contains(res.stdout+res.stderr, gone.Token) {
		t.Errorf("unpair printed the token")
	}
}

// A value start's options refuse is a wrong command line (exit 2) that names
// the flag the person gave, never the field of the runtime's options it
// fills; nothing connects.
func TestRuntimeStart_RefusedOptionNamesItsFlag(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	ad := l.startAdapter("echo")
	m := l.newMachine()
	m.pair(p.Platform, p.CreateAgent("flags").ID, ad.Endpoint)
	for _, tc := range []struct {
		args       []string
		flag, what string
	}{
		{[]string{"--task-timeout", "-1s"}, "--task-timeout", "-1s is negative"},
		{[]string{"--shutdown-grace", "-2s"}, "--shutdown-grace", "-2s is negative"},
		{[]string{"--concurrency", "-1"}, "--concurrency", "-1 is negative"},
		{[]string{"--transport", "pigeon"}, "--transport", `"pigeon" is none of`},
	} {
		res := m.cli(append([]string{"start"}, tc.args...)...)
		if res.code != 2 || !strings.Contains(res.stderr, tc.flag+" "+tc.what) {
			t.Errorf("start %v: exit %d, stderr %q; want exit 2 naming %s %s", tc.args, res.code, res.stderr, tc.flag, tc.what)
		}
		for _, field := range []string{"TaskTimeout", "DrainGrace", "Concurrency", "Mode "} {
			if strings.Contains(res.stderr, field) {
				t.Errorf("start %v names the option field %s: %q", tc.args, field, res.stderr)
			}
		}
	}
}
