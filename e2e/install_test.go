package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestInstall_ScriptFromThePlatformInstallsProgramsThatPairAndRun: a laptop
// with no Go installs a2a-runtime and a2a-adapter from the platform itself
// with `curl -fsSL <platform>/install.sh | sh`, then pairs with the adapter
// the runtime runs and runs a task with what it installed.
func TestInstall_ScriptFromThePlatformInstallsProgramsThatPairAndRun(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	downloads := t.TempDir()
	dist := exec.Command("sh", filepath.Join("deploy", "dist.sh"), downloads, runtime.GOOS+"/"+runtime.GOARCH)
	dist.Dir = ".."
	if out, err := dist.CombinedOutput(); err != nil {
		t.Fatalf("deploy/dist.sh: %v\n%s", err, out)
	}
	p := l.startPlatform(platformOptions{downloadsDir: downloads})

	home := t.TempDir()
	laptop := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	if res := l.run("which go", laptop, "/bin/sh", "-c", "command -v go"); res.code == 0 {
		t.Fatalf("the laptop's PATH holds go: %s", res)
	}
	res := l.run("install.sh", laptop, "/bin/sh", "-c", "curl -fsSL "+p.APIBase+"/install.sh | sh")
	if res.code != 0 {
		t.Fatalf("install.sh: %s", res)
	}
	bin := filepath.Join(home, ".local", "bin")
	for _, prog := range []string{"a2a-runtime", "a2a-adapter"} {
		info, err := os.Stat(filepath.Join(bin, prog))
		if err != nil || info.Mode().Perm()&0o100 == 0 {
			t.Fatalf("%s not installed as a program: %v", prog, err)
		}
		if !strings.Contains((res.stdout + res.stderr), "installed "+filepath.Join(bin, prog)) {
			t.Fatalf("install.sh did not say it installed %s: %s", prog, res)
		}
	}

	// What it installed pairs and works as the web page's instructions say:
	// paired with the adapter, the runtime runs the a2a-adapter installed
	// next to it, which is not on the laptop's PATH.
	endpoint := "http://" + meshtest.FreeAddr(t) + "/run-task"
	agent := p.CreateAgent("installed")
	code := p.PairingCode(agent.ID)
	l.secrets.Add(code)
	if res := l.run("installed pair", laptop, filepath.Join(bin, "a2a-runtime"), "pair", code, "--api-base", p.APIBase, "--local-agent-endpoint", endpoint, "--adapter", "echo"); res.code != 0 {
		t.Fatalf("pair with the installed runtime: %s", res)
	}
	rt := l.start("installed runtime", laptop, filepath.Join(bin, "a2a-runtime"), "start", "--log-level", "debug")
	rt.waitOutput(t, `"message":"runtime started"`, waitStart)
	run := p.CreateTask(agent.ID, "hello from an installed runtime")
	done := waitEnded(t, p.Platform, run.ID, mesh.StatusCompleted, waitStart)
	if !strings.Contains(string(done.Output), "hello from an installed runtime") {
		t.Fatalf("the echo answer: %s", done.Output)
	}
}

// TestInstall_ProgramsAreServedOnlyWithTheirChecksums: the platform serves
// only the programs its checksum list names, and a platform without any says
// how its operator builds them instead of installing nothing quietly.
func TestInstall_ProgramsAreServedOnlyWithTheirChecksums(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	empty := l.startPlatform(platformOptions{downloadsDir: t.TempDir()})
	res := l.run("install.sh without programs", []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}, "/bin/sh", "-c", "curl -fsSL "+empty.APIBase+"/install.sh | sh")
	if res.code == 0 || !strings.Contains((res.stdout+res.stderr), "make dist") {
		t.Fatalf("install.sh from a platform with no programs: %s", res)
	}
	for _, path := range []string{"/downloads/SHA256SUMS", "/downloads/a2a-runtime_linux_amd64", "/downloads/..%2Fowner.token", "/downloads/owner.token"} {
		resp, err := http.Get(empty.APIBase + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"code":"NOT_FOUND"`) {
			t.Fatalf("GET %s: %d %s, want 404 NOT_FOUND", path, resp.StatusCode, body)
		}
	}
}

// TestInstall_APlatformNamingNoDownloadsFolderOffersTheProgramsBesideIt:
// the quick start's platform (bin/a2a-platform up, with no --downloads-dir)
// offers the a2a-runtime and a2a-adapter built beside it for its own
// system, so the page's first step works with no extra build; what the
// laptop installs is those very programs.
func TestInstall_APlatformNamingNoDownloadsFolderOffersTheProgramsBesideIt(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	home := t.TempDir()
	laptop := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	res := l.run("install.sh", laptop, "/bin/sh", "-c", "curl -fsSL "+p.APIBase+"/install.sh | sh")
	if res.code != 0 {
		t.Fatalf("install.sh from the quick start's platform: %s", res)
	}
	for prog, built := range map[string]string{"a2a-runtime": bins.Runtime, "a2a-adapter": bins.Adapter} {
		installed, err := os.ReadFile(filepath.Join(home, ".local", "bin", prog))
		if err != nil {
			t.Fatalf("%s not installed: %v\n%s", prog, err, res)
		}
		want, err := os.ReadFile(built)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(installed, want) {
			t.Fatalf("the installed %s is not the program beside the platform", prog)
		}
	}
}
