package cluster

import (
	"fmt"
	"os"
	"testing"

	"github.com/a2amesh/a2amesh/internal/meshtest"
)

// bins are the programs under test, built once per `go test` run.
var bins meshtest.Programs

func TestMain(m *testing.M) {
	programs, remove, err := meshtest.BuildPrograms()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
	bins = programs
	code := m.Run()
	remove()
	os.Exit(code)
}
