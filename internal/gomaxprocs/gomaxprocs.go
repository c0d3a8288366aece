// Package gomaxprocs sets how many processors the programs that relay a
// run (the runtime and the adapter) run Go code on at the same time.
//
// Both programs spend a run waiting: on the platform's answer, on the
// adapter's, on a host's process. Their own work per run is some tens of
// microseconds of decoding and writing. Given every processor of the
// machine, Go's scheduler keeps waking idle processors to look for work
// between those waits, which cost these programs more CPU than the work
// itself (docs/benchmarks.md, "One processor for the programs that relay a
// run"). One processor is enough for any number of concurrent runs, since
// hosts run as processes of their own.
package gomaxprocs

import (
	"os"
	"runtime"
)

// Relay is the number of processors the runtime and the adapter run Go code
// on, unless the environment variable EnvVar says otherwise.
const Relay = 1

// EnvVar is Go's own variable; when it is set, the program keeps what it
// says.
const EnvVar = "GOMAXPROCS"

// Default sets the processors Go code runs on to n, unless EnvVar is set,
// and returns the number in effect.
func Default(n int) int {
	if os.Getenv(EnvVar) != "" {
		return runtime.GOMAXPROCS(0)
	}
	runtime.GOMAXPROCS(n)
	return n
}
