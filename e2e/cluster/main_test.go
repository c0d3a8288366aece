package cluster

import (
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// bins are the programs under test, built once per `go test` run.
var bins meshtest.Programs

func TestMain(m *testing.M) { meshtest.RunWithPrograms(m, &bins) }
