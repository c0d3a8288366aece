package e2e

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// The hint `a2a-platform pairing-code` prints, followed as printed with
// the placeholder filled in, pairs the agent with the code on standard
// input (never in a process's arguments) and with the adapter named, so
// the agent comes online ready and completes work.
func TestPairingCodeHint_FollowedAsPrintedPairsOverStandardInputAndComesOnlineReady(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.CreateAgent("hinted")
	r := l.run("a2a-platform pairing-code", nil, bins.Platform, "pairing-code", agent.ID,
		"--api-base", p.APIBase, "--owner-token-file", filepath.Join(p.dataDir, "owner.token"), "-o", "json")
	if r.code != 0 {
		t.Fatalf("pairing-code: %s", r)
	}
	var pairLine string
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.Contains(line, "a2a-runtime pair") {
			pairLine = strings.TrimSpace(line)
		}
	}
	if !strings.HasPrefix(pairLine, "echo ") || !strings.Contains(pairLine, "| a2a-runtime pair --api-base "+p.APIBase) ||
		!strings.HasSuffix(pairLine, "--adapter <provider>") {
		t.Fatalf("the hint does not pair with the code on standard input and the adapter named: %q\n%s", pairLine, r)
	}
	if strings.Contains(pairLine, "pair echo") || strings.Contains(pairLine, "pair a2a") {
		t.Fatalf("the hint gives the code as an argument: %q", pairLine)
	}

	// Followed as printed, by a shell, with the echo provider and this
	// machine's programs.
	m := l.newMachine()
	endpoint := "http://" + meshtest.FreeAddr(t) + "/run-task"
	command := strings.Replace(pairLine, "<provider>", "echo --local-agent-endpoint "+endpoint, 1)
	sh := exec.Command("/bin/sh", "-c", command)
	sh.Env = append(os.Environ(), "HOME="+m.Home, "PATH="+filepath.Dir(bins.Runtime)+":"+os.Getenv("PATH"))
	out, err := sh.CombinedOutput()
	l.keep("the hint's pair", string(out))
	if err != nil {
		t.Fatalf("the hint's pair command failed: %v\n%s", err, l.secrets.Mask(string(out)))
	}
	f := m.profileFile()
	prof := f.Profiles[f.ActiveProfile]
	if prof.AgentID != agent.ID {
		t.Fatalf("the hint's pair stored no profile for agent %s: %v", agent.ID, f.names())
	}
	l.secrets.Add(prof.RuntimeToken)
	rt := m.startRuntime()
	waitOnline(t, p.Platform, agent.ID, prof.RuntimeID)
	if v := p.WaitRuntimeView(t, agent.ID, prof.RuntimeID, func(v mesh.RuntimeView) bool { return !v.NotReady }); v.NotReady {
		t.Fatalf("the agent paired as the hint says is online but not ready: %+v\n%s", v, rt.shown(4000))
	}
	run := p.CreateTask(agent.ID, "hello from the hint")
	waitEnded(t, p.Platform, run.ID, mesh.StatusCompleted, waitStart)
}

// install.sh's closing hint pairs with the code on standard input and
// names the adapter.
func TestInstallScriptHint_PairsOverStandardInputWithTheAdapterNamed(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{downloadsDir: t.TempDir()})
	resp, err := http.Get(p.APIBase + "/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	script, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /install.sh: %d %s", resp.StatusCode, script)
	}
	want := `echo "  echo <PAIRING_CODE> | a2a-runtime pair --api-base $base --adapter <provider>"`
	if !strings.Contains(string(script), want) {
		t.Errorf("install.sh does not end with the standard-input pair hint %q:\n%s", want, tail(string(script), 1500))
	}
	if strings.Contains(string(script), "a2a-runtime pair <code>") {
		t.Errorf("install.sh still suggests the code as an argument:\n%s", tail(string(script), 1500))
	}
}
