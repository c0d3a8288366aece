package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// Seed 001 §9 "No token leak", §5.2: after a whole flow (pair, start,
// status, a completed run with artifacts, a failed run), neither the runtime
// token, nor the pairing code, nor the owner credential appears in any
// process's output, the ledger, the platform's events, the runs' outputs and
// artifacts, or the process list.
func TestSecrets_NoTokenOrCodeInLogsLedgerEventsOutputsOrProcessList(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	host := script(t, `
text=$(cat)
if [ "$text" = "fail" ]; then echo "host failed on purpose" >&2; exit 2; fi
printf '# notes\n%s\n' "$text" > "$A2A_OUTPUT_DIR/notes.md"
printf 'progress: halfway\n' >&2
echo "done with $text"
`)
	ad := l.startAdapter("command", host)
	c := l.connect(p, ad.Endpoint)
	secrets := []string{c.Token, c.Code, p.OwnerToken}

	// Taken while the runtime runs: every process's arguments.
	ps, err := exec.Command("ps", "-eo", "args").Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	if !strings.Contains(string(ps), bins.Runtime+" start") {
		t.Fatalf("the process list does not show the running runtime:\n%s", ps)
	}
	cmdline := meshtest.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c.rt.pid()))

	done := waitEnded(t, p.Platform, c.task("write the notes").ID, mesh.StatusCompleted, waitStart)
	failed := waitEnded(t, p.Platform, c.task("fail").ID, mesh.StatusFailed, waitStart)
	if st := c.m.cli("status", "--json"); st.code != 0 {
		t.Fatalf("status: %s", st)
	}
	_ = c.m.cli("status")
	_ = c.m.cli("profiles", "list")

	texts := l.outputs()
	texts["ps -eo args"] = string(ps)
	texts["runtime cmdline"] = cmdline
	texts["ledger"] = meshtest.ReadFile(c.m.ledgerPath(c.AgentID))
	for _, run := range []mesh.TaskRun{done, failed} {
		texts["run "+run.ID] = string(rawTask(t, p.Platform, run.ID))
	}
	arts := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs/" + done.ID + "/artifacts", Owner: true}).Expect(t, http.StatusOK)
	texts["artifact list"] = string(arts.Body)
	if len(done.Artifacts) == 0 {
		t.Fatalf("the completed run has no artifact to scan: %s", texts["run "+done.ID])
	}
	for _, a := range done.Artifacts {
		body := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + a.ArtifactID + "/content", Owner: true}).Expect(t, http.StatusOK)
		texts["artifact "+a.Filename] = string(body.Body)
	}
	var evText strings.Builder
	evs := events(t, p.Platform, url.Values{})
	for _, ev := range evs {
		evText.WriteString(ev.Raw + "\n")
	}
	texts["events"] = evText.String()
	if countEvents(evs, mesh.EventPairingCodeIssued, "") == 0 || countEvents(evs, mesh.EventTaskRunCompleted, done.ID) != 1 {
		t.Fatalf("the event scan missed the flow's events: %d events", len(evs))
	}
	// Every other file the runtime, the adapter and the host left behind.
	for _, dir := range []string{filepath.Dir(c.m.profilePath()), ad.Workdir} {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && path != c.m.profilePath() {
				texts["file "+path] = meshtest.ReadFile(path)
			}
			return nil
		})
	}

	meshtest.AssertNoSecrets(t, secrets, texts)
	// The scan is not vacuous: the token is where it belongs.
	if !strings.Contains(meshtest.ReadFile(c.m.profilePath()), c.Token) {
		t.Fatalf("the runtime token is not in the profile file")
	}
}

// `a2a-runtime events tail` follows the paired agent's own events, with the
// runtime's credential, and never another agent's.
func TestEvents_RuntimeFollowsItsOwnAgentsEventsOnly(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	c := l.connect(p, l.startAdapter("echo").Endpoint)
	other := p.CreateAgent("someone else")
	done := waitEnded(t, p.Platform, c.task("watched").ID, mesh.StatusCompleted, waitStart)
	foreign := p.CreateTask(other.ID, "not yours")

	ev := l.start("a2a-runtime events", c.m.env(), bins.Runtime, "events", "tail", "--since", "1h", "--type", "task_run.completed,task_run.created")
	ev.waitOutput(t, done.ID, waitStart)
	// Its own agent's next event arrives live.
	next := waitEnded(t, p.Platform, c.task("live").ID, mesh.StatusCompleted, waitStart)
	ev.waitOutput(t, next.ID, waitStart)
	out := ev.stdout.String()
	if strings.Contains(out, foreign.ID) || strings.Contains(out, other.ID) {
		t.Errorf("events shows another agent's events:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(line, `"type":"dev.a2amesh.task_run.c`) {
			t.Errorf("events printed an event of another type: %s", line)
		}
	}
	meshtest.AssertNoSecrets(t, []string{c.Token, c.Code, p.OwnerToken}, map[string]string{"events output": ev.output()})
}
