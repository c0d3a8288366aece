package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// bins are the three programs, built once for the tests of this package.
var bins meshtest.Programs

func TestMain(m *testing.M) { meshtest.RunWithPrograms(m, &bins) }

// result is how one run of a program ended.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs a program to its end (at most a minute) with env added to a
// clean environment (HOME in a temporary folder).
func run(t *testing.T, env []string, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", filepath.Base(bin), err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

var versionLine = regexp.MustCompile(`^(a2a-platform|a2a-runtime|a2a-adapter) version (\S+) \(go[0-9.]+[^,]*, [a-z0-9]+/[a-z0-9]+\)\n$`)

// TestVersion_EveryProgramPrintsItsBuild: --version on each program prints
// one line with its name, its version from the build info, the Go release
// and the system, and exits 0.
func TestVersion_EveryProgramPrintsItsBuild(t *testing.T) {
	t.Parallel()
	for name, bin := range map[string]string{"a2a-platform": bins.Platform, "a2a-runtime": bins.Runtime, "a2a-adapter": bins.Adapter} {
		r := run(t, nil, bin, "--version")
		m := versionLine.FindStringSubmatch(r.stdout)
		if r.code != 0 || m == nil || m[1] != name || m[2] == "" {
			t.Errorf("%s --version: %s", name, r)
		}
	}
}

// TestVersion_SetAtBuildShowsOnTheCardAndInRuntimeStatus: a build whose
// -ldflags set the version prints it, the agent cards of a platform built
// so carry it, and `a2a-runtime status` shows the runtime's own version.
func TestVersion_SetAtBuildShowsOnTheCardAndInRuntimeStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const v = "v9.8.7-test"
	ld := "-X github.com/a2amesh/a2amesh/internal/version.Override=" + v
	for _, prog := range []string{"a2a-platform", "a2a-runtime"} {
		out, err := exec.Command("go", "build", "-ldflags", ld, "-o", filepath.Join(dir, prog), "github.com/a2amesh/a2amesh/cmd/"+prog).CombinedOutput()
		if err != nil {
			t.Fatalf("build %s: %v\n%s", prog, err, out)
		}
	}
	if r := run(t, nil, filepath.Join(dir, "a2a-platform"), "--version"); !strings.HasPrefix(r.stdout, "a2a-platform version "+v+" (") {
		t.Fatalf("--version of a build with %s: %s", v, r)
	}
	p := meshtest.StartProcess(t, filepath.Join(dir, "a2a-platform"), meshtest.ProcessOptions{DataDir: t.TempDir()})
	agent := p.CreateAgent("versioned")
	res := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/a2a/" + agent.ID + "/.well-known/agent-card.json"}).Expect(t, http.StatusOK)
	var card struct {
		Version string `json:"version"`
	}
	res.Decode(t, &card)
	if card.Version != v {
		t.Fatalf("card version %q, want %q", card.Version, v)
	}

	home := t.TempDir()
	env := []string{"HOME=" + home}
	code := p.PairingCode(agent.ID)
	if r := run(t, env, filepath.Join(dir, "a2a-runtime"), "pair", code, "--api-base", p.APIBase, "--local-agent-endpoint", "http://127.0.0.1:1"); r.code != 0 {
		t.Fatalf("pair: exit %d", r.code)
	}
	r := run(t, env, filepath.Join(dir, "a2a-runtime"), "status")
	if !regexp.MustCompile(`(?m)^version:\s+` + regexp.QuoteMeta(v) + `$`).MatchString(r.stdout) {
		t.Errorf("status does not show the runtime's version:\n%s", r.stdout)
	}
	r = run(t, env, filepath.Join(dir, "a2a-runtime"), "status", "--json")
	var st struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Version != v {
		t.Errorf("status --json version %q (%v)", st.Version, err)
	}
}

// TestUp_EveryFlagHasAnEnvironmentVariable: `up --help` names a variable
// for every flag; the variables set the listen addresses (the platform
// answers there); a flag on the command line wins; a variable with a value
// the flag cannot take stops the program with a message naming it.
func TestUp_EveryFlagHasAnEnvironmentVariable(t *testing.T) {
	t.Parallel()
	help := run(t, nil, bins.Platform, "up", "--help")
	if help.code != 0 {
		t.Fatalf("up --help: %s", help)
	}
	flagLine := regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9-]+)`)
	n := 0
	for _, line := range strings.Split(help.stdout, "\n") {
		m := flagLine.FindStringSubmatch(line)
		if m == nil || m[1] == "help" {
			continue
		}
		n++
		if !regexp.MustCompile(`\[A2A_[A-Z0-9_]+\]`).MatchString(line) {
			t.Errorf("--%s has no environment variable: %s", m[1], strings.TrimSpace(line))
		}
	}
	if n < 20 {
		t.Fatalf("found %d flags in up --help:\n%s", n, help.stdout)
	}

	httpAddr, natsAddr, data := meshtest.FreeAddr(t), meshtest.FreeAddr(t), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.Platform, "up")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Env = append(os.Environ(), "A2A_MESH_HTTP="+httpAddr, "A2A_MESH_NATS_LISTEN="+natsAddr, "A2A_MESH_DATA_DIR="+data, "A2A_MESH_LEASE=45s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	meshtest.Eventually(t, 30*time.Second, func() bool {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { return "the platform did not answer at A2A_MESH_HTTP" })

	bad := run(t, []string{"A2A_MESH_LEASE=soon", "A2A_MESH_DATA_DIR=" + t.TempDir()}, bins.Platform, "up", "--http", meshtest.FreeAddr(t), "--nats-listen", "off")
	if bad.code == 0 || !strings.Contains(bad.stderr, "A2A_MESH_LEASE") {
		t.Errorf("up with A2A_MESH_LEASE=soon: %s", bad)
	}
}

// TestMake_RunPassesArgsToUp: `make run ARGS='…'` hands its flags to up.
func TestMake_RunPassesArgsToUp(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("make", "-n", "-C", filepath.Join("..", ".."), "run", "ARGS=--http 127.0.0.1:3999 --log-level debug")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "a2a-platform up --http 127.0.0.1:3999 --log-level debug") {
		t.Fatalf("make run does not pass ARGS to up:\n%s", out)
	}
}
