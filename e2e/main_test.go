package e2e

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// bins are the programs under test, built once per `go test` run.
var bins meshtest.Programs

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
	programs, remove, err := meshtest.BuildPrograms()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	bins = programs
	code := m.Run()
	remove()
	os.Exit(code)
}

func parallelSet() bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	return set
}
