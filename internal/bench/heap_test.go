package bench

import (
	"math"
	"strings"
	"testing"
)

// TestParseHeapProfile_SplitsServerFramesAndScalesForSampling: a record
// whose stack runs through the NATS server counts as the server's, any
// other as the rest of the process, each scaled back up for the sampling
// rate (twice the rate in the header), and the MemStats trailer ends it.
func TestParseHeapProfile_SplitsServerFramesAndScalesForSampling(t *testing.T) {
	const profile = `heap profile: 3: 3072 [3: 3072] @ heap/1048576
1: 1024 [1: 1024] @ 0x1 0x2
#	0x1	github.com/nats-io/nats-server/v2/server.(*client).readLoop+0x1	server/client.go:1
#	0x2	runtime.goexit+0x1	runtime/asm.go:1

2: 2048 [2: 2048] @ 0x3
#	0x3	github.com/a2amesh/a2amesh/bus.(*Mirror).apply+0x1	bus/mirror.go:1

# runtime.MemStats
# Alloc = 123
1: 999999 [1: 999999] @ 0x4
`
	server, other, err := parseHeapProfile(strings.NewReader(profile))
	if err != nil {
		t.Fatal(err)
	}
	scale := 1 / (1 - math.Exp(-1024.0/524288))
	if want := int64(1024 * scale); server != want {
		t.Errorf("server = %d, want %d", server, want)
	}
	if want := int64(2048 * scale); other != want {
		t.Errorf("other = %d, want %d", other, want)
	}
}

func TestParseHeapProfile_RefusesWhatIsNotAHeapProfile(t *testing.T) {
	if _, _, err := parseHeapProfile(strings.NewReader("goroutine profile: total 3\n")); err == nil {
		t.Fatal("a goroutine profile was read as a heap profile")
	}
}

// The stack figure is read from the MemStats trailer: in use, not the
// system's share.
func TestMemStat_ReadsTheInUseFigure(t *testing.T) {
	profile := []byte("heap profile: 0: 0 [0: 0] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 123\n# Stack = 655360 / 655360\n# MSpan = 1 / 2\n")
	got, err := memStat(profile, "Stack")
	if err != nil || got != 655360 {
		t.Fatalf("memStat = %d, %v; want 655360", got, err)
	}
	if _, err := memStat(profile, "NoSuch"); err == nil {
		t.Fatal("a missing line was read")
	}
}
