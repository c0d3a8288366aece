package gateway_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// retainedProfile, when set, is the file prefix of two heap profiles of
// each door, written before its tasks and after they were accepted and
// settled, while the platform still runs: the in-use difference is what
// the tasks retain, the allocated one what they cost.
var retainedProfile = flag.String("accepted-task-heap-profile", "", "write a heap profile of each door of BenchmarkAcceptedTask to `prefix`-<door>-start.pprof before its tasks and -end.pprof after them")

// allocatedBytes is how many bytes the process has allocated on the heap
// since it started.
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// liveBytes is the heap the objects still reachable hold, after two
// collections.
func liveBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// settle waits until the platform has announced every task of the agent
// accepted so far (want runs): a task's created event, stored after its
// record, is the last step of its creation, which the services take after
// the gateway has answered.
func settle(b *testing.B, f *bodyFixture, want int) {
	b.Helper()
	meshtest.Eventually(b, time.Minute, func() bool { return announcedRuns(b, f) >= want },
		func() string { return fmt.Sprintf("the platform announced %d of %d tasks", announcedRuns(b, f), want) })
}

// announcedRuns is how many runs of the fixture's agent have events in the
// event stream (each run's events share a subject).
func announcedRuns(b *testing.B, f *bodyFixture) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := f.p.Conn().JS.Stream(ctx, bus.EventStream)
	if err != nil {
		b.Fatal(err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(bus.EventFilter(f.agent.ID, string(mesh.KindTaskRun), "")))
	if err != nil {
		b.Fatal(err)
	}
	return len(info.State.Subjects)
}

// acceptedTaskDoor is a way a task enters: its path, the body of the i-th
// task, its headers and the status of an accepted task.
type acceptedTaskDoor struct {
	name     string
	path     func(f *bodyFixture) string
	body     func(f *bodyFixture, i int) *filledBody
	header   func(f *bodyFixture) http.Header
	accepted int
}

var acceptedTaskDoors = []acceptedTaskDoor{
	{
		name: "A2A message/send anonymous 255KiB",
		path: func(f *bodyFixture) string { return "/a2a/" + f.agent.ID },
		body: func(f *bodyFixture, i int) *filledBody {
			_, b := doors[0].body(f, i, doors[0].anonymousSize)
			return b
		},
		header:   func(*bodyFixture) http.Header { return nil },
		accepted: http.StatusOK,
	},
	{
		name: "REST POST /task-runs 1MiB",
		path: func(*bodyFixture) string { return "/task-runs" },
		body: func(f *bodyFixture, i int) *filledBody {
			prefix := fmt.Sprintf(`{"target_agent_id":%q,"input":{"text":"`, f.agent.ID)
			suffix := `"}}`
			// The input is {"text":"..."}: its JSON is at most MaxInputBytes.
			n := mesh.MaxInputBytes - len(`{"text":""}`) - 1024
			return newFilledBody(prefix, 'x', n, suffix)
		},
		header:   func(f *bodyFixture) http.Header { return http.Header{"Authorization": {"Bearer " + f.p.OwnerToken}} },
		accepted: http.StatusCreated,
	},
}

// BenchmarkAcceptedTask sends maximum-size tasks through each door, one
// at a time, to a platform as `up` runs it (gateway, services and NATS
// server in this process), and reports per accepted task the bytes the
// whole process allocated for it (alloc-B/task, the services' work after
// the answer included) and the live heap that stays while the tasks wait
// for a runtime (retained-B/task).
func BenchmarkAcceptedTask(b *testing.B) {
	for _, d := range acceptedTaskDoors {
		b.Run(d.name, func(b *testing.B) {
			f := startBodyFixture(b, func(c *platform.Config) { c.Logger = zerolog.Nop() })
			url, header := f.p.APIBase+d.path(f), d.header(f)
			// One task first: JetStream's caches and the buffer pools
			// are sized once.
			announced := announcedRuns(b, f)
			first := d.body(f, -1)
			if a := post(b, url, header, first, first.Len()); a.status != d.accepted {
				b.Fatalf("first task: %d %s", a.status, a.body)
			}
			settle(b, f, announced+1)
			live, allocated := liveBytes(), allocatedBytes()
			if *retainedProfile != "" {
				writeHeapProfile(b, *retainedProfile+"-"+strings.Fields(d.name)[0]+"-start.pprof")
			}
			b.ResetTimer()
			for i := range b.N {
				body := d.body(f, i)
				a := post(b, url, header, body, body.Len())
				if a.status != d.accepted || bytes.Contains(a.body, []byte(`"error"`)) {
					b.Fatalf("task %d: %d %s", i, a.status, a.body)
				}
			}
			b.StopTimer()
			settle(b, f, announced+1+b.N)
			b.ReportMetric(float64(allocatedBytes()-allocated)/float64(b.N), "alloc-B/task")
			b.ReportMetric(float64(int64(liveBytes())-int64(live))/float64(b.N), "retained-B/task")
			if *retainedProfile != "" {
				writeHeapProfile(b, *retainedProfile+"-"+strings.Fields(d.name)[0]+"-end.pprof")
			}
		})
	}
}

func writeHeapProfile(b *testing.B, path string) {
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	if err := pprof.Lookup("heap").WriteTo(out, 0); err != nil {
		b.Fatal(err)
	}
}
