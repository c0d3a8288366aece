package e2e

import (
	"flag"
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

// minParallel is how many tests run at once unless -parallel is given. The
// tests spend most of their time waiting for leases, heartbeats and child
// processes rather than computing, so more of them than there are CPUs keeps
// the suite short without making the waits it measures unreliable.
const minParallel = 6

func TestMain(m *testing.M) {
	flag.Parse()
	if !parallelSet() && runtime.GOMAXPROCS(0) < minParallel {
		_ = flag.Set("test.parallel", fmt.Sprint(minParallel))
	}
	dir, err := os.MkdirTemp("", "a2a-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	code := 1
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
	} else {
		code = m.Run()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func parallelSet() bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	return set
}

// build compiles the three programs into dir, without the race detector:
// the suite tests their behaviour, and the test binary keeps -race.
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
