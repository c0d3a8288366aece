// Package web_test drives the platform's web page in a real headless
// Chromium: sign-in, agents, connecting a real runtime with a code from the
// page, work with live progress, artifacts, cancelling, webhooks and
// consumers, the keyboard and a phone's width, and recovery from a platform
// restart. Each step leaves a screenshot in the output folder
// ($A2A_MESH_TEST_OUTPUT, else e2e/web/screenshots/).
//
// Run it with: go test -race -count=1 ./e2e/web/
package web_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// bins are the programs under test, built once per `go test` run.
var bins struct {
	platform, runtime, adapter string
}

// chromium is the browser the tests drive (Debian's package; .ci/run
// installs it).
const chromium = "/usr/bin/chromium"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "a2a-web-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e/web:", err)
		os.Exit(1)
	}
	code := 1
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e/web:", err)
	} else {
		code = m.Run()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles the three programs into dir, without the race detector:
// the tests check their behaviour, and the test binary keeps -race.
func build(dir string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	const module = "github.com/a2amesh/a2amesh/cmd/"
	cmd := exec.Command(gobin, "build", "-o", dir+string(filepath.Separator),
		module+"a2a-platform", module+"a2a-runtime", module+"a2a-adapter")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	bins.platform = filepath.Join(dir, "a2a-platform")
	bins.runtime = filepath.Join(dir, "a2a-runtime")
	bins.adapter = filepath.Join(dir, "a2a-adapter")
	return nil
}
