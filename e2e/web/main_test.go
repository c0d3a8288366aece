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
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// bins are the programs under test, built once per `go test` run.
var bins meshtest.Programs

// chromium is the browser the tests drive (Debian's package; .ci/run
// installs it).
const chromium = "/usr/bin/chromium"

func TestMain(m *testing.M) {
	programs, remove, err := meshtest.BuildPrograms()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e/web:", err)
		os.Exit(1)
	}
	bins = programs
	code := m.Run()
	remove()
	os.Exit(code)
}
