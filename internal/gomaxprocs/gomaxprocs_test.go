package gomaxprocs

import (
	"runtime"
	"strconv"
	"testing"
)

func TestDefault_SetsTheNumberWhenTheEnvironmentDoesNot(t *testing.T) {
	t.Setenv(EnvVar, "")
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	if got := Default(Relay); got != Relay {
		t.Fatalf("Default(%d) = %d", Relay, got)
	}
	if got := runtime.GOMAXPROCS(0); got != Relay {
		t.Fatalf("GOMAXPROCS after Default(%d) = %d", Relay, got)
	}
}

func TestDefault_KeepsWhatTheEnvironmentSays(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	want := Relay + 2
	runtime.GOMAXPROCS(want)
	t.Setenv(EnvVar, strconv.Itoa(want))
	if got := Default(Relay); got != want {
		t.Fatalf("Default(%d) with %s=%d = %d", Relay, EnvVar, want, got)
	}
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("GOMAXPROCS after Default with %s=%d = %d", EnvVar, want, got)
	}
}
