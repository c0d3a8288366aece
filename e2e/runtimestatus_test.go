package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// runtimeStatus is what `a2a-runtime status --json` says about the adapter.
type runtimeStatus struct {
	Endpoint       string `json:"local_agent_endpoint"`
	StoredEndpoint string `json:"stored_local_agent_endpoint"`
	Adapter        string `json:"adapter"`
	RunningStart   *struct {
		PID int `json:"pid"`
	} `json:"running_start"`
}

func statusJSON(t *testing.T, m *machine) runtimeStatus {
	t.Helper()
	res := m.cli("status", "--json")
	if res.code != 0 {
		t.Fatalf("status --json: %s", res)
	}
	var st runtimeStatus
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, res.stdout)
	}
	return st
}

// `status` reports the adapter a running `start` works with: the endpoint
// given to start with --local-agent-endpoint, not the one stored at
// pairing, where nothing listens; it names the stored one as different.
// Once that start is gone, status checks the stored endpoint again.
func TestStatus_ReportsTheAdapterEndpointTheRunningStartUses(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	ad := l.startAdapter("echo")
	m := l.newMachine()
	stored := "http://" + meshtest.FreeAddr(t) + "/run-task"
	pr := m.pair(p.Platform, p.CreateAgent("status").ID, stored)

	rt := m.startRuntime("--local-agent-endpoint", ad.Endpoint)
	waitOnline(t, p.Platform, pr.AgentID, pr.RuntimeID)
	waitEnded(t, p.Platform, p.CreateTask(pr.AgentID, "hello").ID, mesh.StatusCompleted, waitStart)

	st := statusJSON(t, m)
	if st.Endpoint != ad.Endpoint || st.Adapter != "healthy" {
		t.Errorf("status says the adapter is %q at %s, want healthy at %s, where the running start calls it", st.Adapter, st.Endpoint, ad.Endpoint)
	}
	if st.StoredEndpoint != stored {
		t.Errorf("status --json gives the stored endpoint as %q, want %s", st.StoredEndpoint, stored)
	}
	if st.RunningStart == nil || st.RunningStart.PID != rt.pid() {
		t.Errorf("status --json running_start = %+v, want the pid %d of the running start", st.RunningStart, rt.pid())
	}
	text := m.cli("status")
	if text.code != 0 {
		t.Fatalf("status: %s", text)
	}
	for _, want := range []string{"healthy at " + ad.Endpoint, "stored in the profile: " + stored} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("status does not say %q:\n%s", want, text.stdout)
		}
	}
	for _, unwanted := range []string{"unreachable", "claims no task runs"} {
		if strings.Contains(text.stdout, unwanted) {
			t.Errorf("status says %q while the running start completes tasks:\n%s", unwanted, text.stdout)
		}
	}

	rt.kill()
	st = statusJSON(t, m)
	if st.Endpoint != stored || st.Adapter != "unreachable" || st.RunningStart != nil {
		t.Errorf("with no start running, status says %q at %s (running %+v), want the stored %s, unreachable", st.Adapter, st.Endpoint, st.RunningStart, stored)
	}
}

// `status` with a credential the platform refuses exits 3, the code start
// exits with for the same reason, and says to pair the same agent again;
// --json still prints the report.
func TestStatus_RefusedCredentialExits3LikeStart(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	m := l.newMachine()
	pr := m.pair(p.Platform, p.CreateAgent("refused").ID, "http://"+meshtest.FreeAddr(t)+"/run-task")
	if res := m.cli("status"); res.code != 0 {
		t.Fatalf("status with a working credential: %s", res)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + pr.RuntimeID + "/revoke", Owner: true}).
		Expect(t, http.StatusOK)

	res := m.cli("status")
	if res.code != 3 {
		t.Errorf("status with a revoked credential exited %d, want 3: %s", res.code, res)
	}
	if !strings.Contains(res.stderr, "same agent") || !strings.Contains(res.stdout, "credential refused") {
		t.Errorf("status does not say the credential was refused and to pair the same agent: %s", res)
	}
	js := m.cli("status", "--json")
	var report map[string]any
	if js.code != 3 || json.Unmarshal([]byte(js.stdout), &report) != nil {
		t.Errorf("status --json with a revoked credential: want exit 3 and the report as JSON: %s", js)
	}
	if strings.Contains(res.stdout+res.stderr+js.stdout+js.stderr, pr.Token) {
		t.Errorf("status printed the token")
	}
}

// `profiles list` names each profile's agent and says whether its
// credential still works, asking the platform; a revoked one is marked so,
// with the command that removes it, and `profiles prune` removes exactly
// the profiles the platform refuses.
func TestProfilesList_NamesTheAgentAndMarksRevokedProfilesWhichPruneRemoves(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	m := l.newMachine()
	endpoint := "http://" + meshtest.FreeAddr(t) + "/run-task"
	kept := m.pair(p.Platform, p.CreateAgent("kept-agent").ID, endpoint)
	gone := m.pair(p.Platform, p.CreateAgent("revoked-agent").ID, endpoint)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + gone.RuntimeID + "/revoke", Owner: true}).
		Expect(t, http.StatusOK)

	list := m.cli("profiles", "list")
	if list.code != 0 {
		t.Fatalf("profiles list: %s", list)
	}
	line := func(name string) string {
		for _, l := range strings.Split(list.stdout, "\n") {
			if strings.Contains(l, name) {
				return l
			}
		}
		t.Fatalf("profiles list has no line for %s:\n%s", name, list.stdout)
		return ""
	}
	if l := line(kept.Name()); !strings.Contains(l, "kept-agent") || !strings.Contains(l, "works") {
		t.Errorf("the working profile's line does not name its agent and say it works: %q", l)
	}
	if l := line(gone.Name()); !strings.Contains(l, "revoked-agent") || !strings.Contains(l, "refused") {
		t.Errorf("the revoked profile's line does not name its agent and say it is refused: %q", l)
	}
	if !strings.Contains(list.stdout, "a2a-runtime profiles prune") {
		t.Errorf("profiles list does not offer removing the revoked profile:\n%s", list.stdout)
	}

	prune := m.cli("profiles", "prune")
	if prune.code != 0 || !strings.Contains(prune.stdout, gone.Name()) {
		t.Fatalf("profiles prune: %s", prune)
	}
	if names := m.profileFile().names(); len(names) != 1 || names[0] != kept.Name() {
		t.Errorf("after prune the profiles are %v, want only %s", names, kept.Name())
	}
	if out := list.stdout + list.stderr + prune.stdout + prune.stderr; strings.Contains(out, kept.Token) || strings.Contains(out, gone.Token) {
		t.Errorf("profiles list or prune printed a token")
	}
}

// `pair` without --api-base says which platform it pairs with (the
// default, or A2A_MESH_API_BASE), and when nothing answers there it says
// so and how to name the right one, exiting 1.
func TestPair_WithoutAPIBaseSaysWhichPlatformAndFailsClearlyWhenNothingAnswers(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	m := l.newMachine()
	nobody := "http://" + meshtest.FreeAddr(t)
	res := l.run("a2a-runtime pair", append(m.env(), "A2A_MESH_API_BASE="+nobody, "A2A_PAIRING_CODE=ABCD-EFGH-JKLM"), bins.Runtime, "pair", "--adapter", "echo")
	if res.code != 1 {
		t.Errorf("pair with nothing at the platform address exited %d, want 1: %s", res.code, res)
	}
	for _, want := range []string{"platform at " + nobody, "A2A_MESH_API_BASE", "nothing answers at " + nobody, "--api-base"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("pair does not say %q: %s", want, res)
		}
	}

	def := l.run("a2a-runtime pair", append(m.env(), "A2A_MESH_API_BASE=", "A2A_PAIRING_CODE=ABCD-EFGH-JKLM"), bins.Runtime, "pair", "--adapter", "echo")
	if def.code == 0 || !strings.Contains(def.stderr, "platform at http://127.0.0.1:3000 (the default") {
		t.Errorf("pair without --api-base does not say it uses the default platform address: %s", def)
	}
}
