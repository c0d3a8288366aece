// Package cpuprofile writes a CPU profile of a program's whole life to a
// file, so the shipped programs can be profiled from outside as they run
// (the bench's end to end with processes does).
package cpuprofile

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// EnvVar names the environment variable the three programs read at start:
// when set, each writes a CPU profile of its whole run to the file it names
// (one file per process: give each process its own).
const EnvVar = "A2A_MESH_CPU_PROFILE"

// Start begins a CPU profile written to path and returns what ends it and
// closes the file; an empty path profiles nothing and stop does nothing.
func Start(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvVar, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", EnvVar, err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
