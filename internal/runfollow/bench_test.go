package runfollow

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// BenchmarkFollow_StartStop: what starting a follower costs (its
// subscriptions and the read of the stream's position) and stopping it.
func BenchmarkFollow_StartStop(b *testing.B) {
	s := newStream(b, Config{})
	subjects := RunSubjects(mesh.NewID(), mesh.NewID(), true)
	b.ReportAllocs()
	for b.Loop() {
		f, err := s.src.Follow(s.ctx, subjects, Now())
		if err != nil {
			b.Fatal(err)
		}
		f.Stop()
	}
}

// BenchmarkFollow_Event: from publishing a run's event to the follower
// returning it, and how many reads of the stream each event costs.
func BenchmarkFollow_Event(b *testing.B) {
	s := newStream(b, Config{})
	agent, run := mesh.NewID(), mesh.NewID()
	f := s.follow(RunSubjects(agent, run, false), Now())
	ctx := context.Background()
	// Past the fresh follower's first reads.
	s.run(agent, run, 1)
	if _, err := f.Next(ctx); err != nil {
		b.Fatal(err)
	}
	reads := s.src.reads.Load()
	rev := uint64(1)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rev++
		s.run(agent, run, rev)
		if _, err := f.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(s.src.reads.Load()-reads)/float64(b.N), "reads/event")
}

// BenchmarkFollow_Idle: what 1000 idle followers (a run with its artifacts
// each, the readers of 1000 open SSE streams) hold: memory and goroutines
// per follower, and the reads they make while nothing happens.
func BenchmarkFollow_Idle(b *testing.B) {
	const n = 1000
	s := newStream(b, Config{Poll: time.Second})
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		goroutines := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		fs := make([]*Follower, n)
		done := make(chan struct{}, n)
		for i := range fs {
			f, err := s.src.Follow(ctx, RunSubjects(mesh.NewID(), mesh.NewID(), true), Now())
			if err != nil {
				b.Fatal(err)
			}
			fs[i] = f
			go func() {
				_, _ = f.Next(ctx)
				done <- struct{}{}
			}()
		}
		// Past the fresh followers' first reads, then one poll interval.
		time.Sleep(1500 * time.Millisecond)
		reads := s.src.reads.Load()
		time.Sleep(time.Second)
		idleReads := s.src.reads.Load() - reads
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/n, "heap-bytes/follower")
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/n, "goroutines/follower")
		b.ReportMetric(float64(idleReads)/n, "idle-reads/follower/s")
		cancel()
		for _, f := range fs {
			f.Stop()
		}
		for range fs {
			<-done
		}
	}
}

// BenchmarkFollow_EveryEventOnAStreamOfManyRuns: a follower of every event
// (an unfiltered GET /events) on a stream that holds the events of 20,000
// runs, each its own subject: from publishing an event to the follower
// returning it. Each read's answer says how many events follow, which the
// stream's store counts; for the filter of every event it must not walk
// every subject it holds.
func BenchmarkFollow_EveryEventOnAStreamOfManyRuns(b *testing.B) {
	s := newStream(b, Config{})
	agent := mesh.NewID()
	for range 20000 {
		s.run(agent, mesh.NewID(), 1)
	}
	f := s.follow(bus.EventStreamSubjects(), Now())
	ctx := context.Background()
	run := mesh.NewID()
	s.run(agent, run, 1)
	if _, err := f.Next(ctx); err != nil {
		b.Fatal(err)
	}
	rev := uint64(1)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rev++
		s.run(agent, run, rev)
		if _, err := f.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
