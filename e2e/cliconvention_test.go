package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// The admin verbs exit by class, so a script can tell what went wrong
// without reading the message: 0 done, 2 a wrong command line, 6 no owner
// credential or a refused one, 7 what the command names does not exist.
func TestPlatformCLI_AdminVerbsExitByClass(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.forTest(t).CreateAgent("classified")
	wrongToken := filepath.Join(t.TempDir(), "wrong.token")
	if err := os.WriteFile(wrongToken, []byte("not-the-owner-credential\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noData := []string{"--data-dir", t.TempDir()}
	for _, c := range []struct {
		name string
		res  result
		code int
	}{
		{"agents list", p.admin("agents", "list"), 0},
		{"agents lst (a mistyped verb)", p.admin("agents", "lst"), 2},
		{"tasks list -o yaml (a format that does not exist)", p.admin("tasks", "list", "-o", "yaml"), 2},
		{"a refused owner credential", l.run("a2a-platform agents list", nil, bins.Platform, "agents", "list", "--api-base", p.APIBase, "--owner-token-file", wrongToken), 6},
		{"no owner credential", l.run("a2a-platform agents list", nil, bins.Platform, append([]string{"agents", "list", "--api-base", p.APIBase}, noData...)...), 6},
		{"tasks get of a run that does not exist", p.admin("tasks", "get", "run-that-does-not-exist"), 7},
		{"agents runtimes of an agent that does not exist", p.admin("agents", "runtimes", "agent-that-does-not-exist"), 7},
		{"agents runtimes of one that does", p.admin("agents", "runtimes", agent.ID), 0},
		{"an unknown context", l.run("a2a-platform agents list", nil, bins.Platform, append([]string{"agents", "list", "--context", "nowhere"}, noData...)...), 7},
	} {
		if c.res.code != c.code {
			t.Errorf("%s exited %d, want %d: %s", c.name, c.res.code, c.code, c.res)
		}
	}
}

// A context names a platform and its owner credential once: after context
// add and use, the admin verbs reach it without --api-base or
// --owner-token-file; the file is readable by its owner only; a flag, or
// its variable, still wins over the context.
func TestPlatformCLI_ContextsSpareTheAPIBaseAndCredentialFlags(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.forTest(t).CreateAgent("in-context")
	home := t.TempDir()
	env := []string{"HOME=" + home}
	admin := func(args ...string) result {
		t.Helper()
		return l.run("a2a-platform "+args[0], env, bins.Platform, args...)
	}
	if r := admin("context", "add", "lab", "--api-base", p.APIBase, "--owner-token-file", filepath.Join(p.dataDir, "owner.token")); r.code != 0 {
		t.Fatalf("context add: %s", r)
	}
	if r := admin("context", "add", "elsewhere", "--api-base", "http://"+meshtest.FreeAddr(t)); r.code != 0 {
		t.Fatalf("context add elsewhere: %s", r)
	}
	if r := admin("context", "use", "lab"); r.code != 0 {
		t.Fatalf("context use: %s", r)
	}
	file := filepath.Join(home, ".a2a-mesh", "contexts.json")
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the contexts file: %v, mode %v; want 0600", err, info)
	}
	r := admin("agents", "list", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, agent.ID) {
		t.Fatalf("agents list in context lab, without --api-base: %s", r)
	}
	var list struct {
		Contexts []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
			APIBase string `json:"api_base"`
		} `json:"contexts"`
	}
	r = admin("context", "list", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Contexts) != 2 || list.Contexts[1].Name != "lab" || !list.Contexts[1].Current || list.Contexts[1].APIBase != p.APIBase {
		t.Errorf("context list -o json: %v: %s", err, r)
	}
	if r := admin("agents", "list", "--context", "elsewhere"); r.code == 0 {
		t.Errorf("agents list --context elsewhere (nothing listens there) succeeded: %s", r)
	}
	wrong := "http://" + meshtest.FreeAddr(t)
	if r := l.run("a2a-platform agents list", append(env, "A2A_MESH_API_BASE="+wrong), bins.Platform, "agents", "list", "-o", "json"); r.code == 0 {
		t.Errorf("A2A_MESH_API_BASE did not win over the context: %s", r)
	}
	if r := l.run("a2a-platform agents list", append(env, "A2A_MESH_API_BASE="+wrong), bins.Platform, "agents", "list", "-o", "json", "--api-base", p.APIBase); r.code != 0 || !strings.Contains(r.stdout, agent.ID) {
		t.Errorf("--api-base did not win over A2A_MESH_API_BASE: %s", r)
	}
}

// A variable's former name still sets its flag, for one release, with a
// notice naming the new one: A2A_RATE_LIMIT_PER_MINUTE reaches
// --a2a-rate-limit-per-minute (a value it refuses names the variable), and
// A2A_PAIRING_CODE still pairs. A former flag name still works and warns.
func TestCLI_FormerNamesStillWorkAndWarn(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	up := l.run("a2a-platform up", []string{"A2A_RATE_LIMIT_PER_MINUTE=-5"}, bins.Platform,
		"up", "--data-dir", t.TempDir(), "--http", "127.0.0.1:0", "--nats-listen", "127.0.0.1:0", "--log-level", "error")
	if up.code != 2 || !strings.Contains(up.stderr, "A2A_RATE_LIMIT_PER_MINUTE is deprecated") || !strings.Contains(up.stderr, "A2A_MESH_A2A_RATE_LIMIT_PER_MINUTE") ||
		!strings.Contains(up.stderr, `A2A_RATE_LIMIT_PER_MINUTE="-5"`) {
		t.Errorf("up with A2A_RATE_LIMIT_PER_MINUTE=-5: %s", up)
	}

	p := l.startPlatform(platformOptions{})
	mp := p.forTest(t)
	agent := mp.CreateAgent("paired-the-old-way")
	code := mp.PairingCode(agent.ID)
	l.secrets.Add(code)
	m := l.newMachine()
	pair := l.run("a2a-runtime pair", append(m.env(), "A2A_PAIRING_CODE="+code), bins.Runtime, "pair", "--api-base", p.APIBase)
	if pair.code != 0 || !strings.Contains(pair.stderr, "A2A_PAIRING_CODE is deprecated") || !strings.Contains(pair.stderr, "A2A_MESH_PAIRING_CODE") {
		t.Errorf("pair with A2A_PAIRING_CODE: %s", pair)
	}

	created := p.admin("agents", "create", "--name", "instructed", "--instructions-file", "/dev/null")
	if created.code != 0 || !strings.Contains(created.stderr, "--instructions-file has been deprecated, use --instruction-file") {
		t.Errorf("agents create --instructions-file: %s", created)
	}
}

// A variable sets its flag in each program: a2a-runtime status takes
// -o from A2A_MESH_OUTPUT, and profiles list prints JSON with -o json.
func TestRuntimeCLI_VariablesSetFlagsAndProfilesListPrintsJSON(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	mp := p.forTest(t)
	agent := mp.CreateAgent("listed")
	m := l.newMachine()
	pr := m.pair(mp, agent.ID, "http://127.0.0.1:1/run-task")
	var list struct {
		Profiles []struct {
			Name    string `json:"name"`
			Active  bool   `json:"active"`
			AgentID string `json:"agent_id"`
			State   string `json:"state"`
		} `json:"profiles"`
	}
	r := m.cli("profiles", "list", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Profiles) != 1 || list.Profiles[0].Name != pr.Name() || !list.Profiles[0].Active || list.Profiles[0].State != "works" {
		t.Errorf("profiles list -o json: %v: %s", err, r)
	}
	st := l.run("a2a-runtime status", append(m.env(), "A2A_MESH_OUTPUT=json"), bins.Runtime, "status")
	var status struct {
		Profile struct {
			AgentID string `json:"agent_id"`
		} `json:"profile"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &status); err != nil || status.Profile.AgentID != agent.ID {
		t.Errorf("status with A2A_MESH_OUTPUT=json: %v: %s", err, st)
	}
	if tbl := l.run("a2a-runtime status", append(m.env(), "A2A_MESH_OUTPUT=json"), bins.Runtime, "status", "-o", "table"); !strings.Contains(tbl.stdout, "agent id:") {
		t.Errorf("status -o table did not win over A2A_MESH_OUTPUT=json: %s", tbl)
	}
}

// Shell completion knows the values of -o, --status and the providers,
// and a2a-adapter has a completion command.
func TestCLI_CompletionOffersFlagValues(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	for _, c := range []struct {
		bin  string
		args []string
		want []string
	}{
		{bins.Platform, []string{"__complete", "agents", "list", "-o", ""}, []string{"table", "json", "jsonl"}},
		{bins.Platform, []string{"__complete", "tasks", "list", "--status", ""}, []string{"pending", "input-required", "canceled"}},
		{bins.Runtime, []string{"__complete", "profiles", "list", "-o", ""}, []string{"table", "json", "jsonl"}},
		{bins.Runtime, []string{"__complete", "pair", "--adapter", ""}, []string{"claude", "codex", "echo"}},
		{bins.Runtime, []string{"__complete", "start", "--provider", ""}, []string{"claude", "none"}},
		{bins.Adapter, []string{"__complete", "--provider", ""}, []string{"echo", "command", "claude", "openclaw"}},
		{bins.Adapter, []string{"completion", "bash"}, []string{"a2a-adapter"}},
	} {
		r := l.run(filepath.Base(c.bin)+" "+strings.Join(c.args, " "), nil, c.bin, c.args...)
		lines := strings.Split(r.stdout, "\n")
		for _, w := range c.want {
			found := false
			for _, line := range lines {
				found = found || strings.SplitN(line, "\t", 2)[0] == w || c.args[0] == "completion" && strings.Contains(line, w)
			}
			if r.code != 0 || !found {
				t.Errorf("%s %v does not offer %q: %s", filepath.Base(c.bin), c.args, w, r)
			}
		}
	}
}
