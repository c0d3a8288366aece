//go:build race

package meshtest

// raceEnabled says the tests run with the race detector; programs they build
// are built the same way so the build reuses the packages already compiled.
const raceEnabled = true
