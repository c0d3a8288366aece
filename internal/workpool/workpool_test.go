package workpool

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
	"time"
)

// goroutineID is the id runtime.Stack names the calling goroutine by.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return string(bytes.Fields(buf)[1])
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPool: jobs never wait for each other; a goroutine that finished a
// job runs the next one; no more than maxIdle wait; Stop ends them.
func TestPool(t *testing.T) {
	before := runtime.NumGoroutine()
	p := New(2)

	// Ten jobs that block until released all run at once.
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(10)
	for range 10 {
		p.Go(func() { started.Done(); <-release })
	}
	done := make(chan struct{})
	go func() { started.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ten jobs did not all start: one waited for another")
	}
	close(release)
	eventually(t, "more than two goroutines stayed waiting", func() bool {
		return p.idle.Load() == 2 && runtime.NumGoroutine() <= before+2
	})

	// The next jobs run on the goroutines that wait.
	seen := map[string]bool{}
	for range 20 {
		got := make(chan string, 1)
		p.Go(func() { got <- goroutineID() })
		seen[<-got] = true
		eventually(t, "the goroutine did not wait again", func() bool { return p.idle.Load() == 2 })
	}
	if len(seen) > 2 {
		t.Fatalf("20 jobs one after the other ran on %d goroutines, want at most the 2 waiting", len(seen))
	}

	p.Stop()
	eventually(t, "waiting goroutines outlived Stop", func() bool { return runtime.NumGoroutine() <= before })
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a job given after Stop did not run")
	}
}

// TestPool_WaitingGoroutineHoldsNothingOfItsJob: what a job's function
// refers to (a request's body) can be collected once the job ran, while
// its goroutine waits for the next.
func TestPool_WaitingGoroutineHoldsNothingOfItsJob(t *testing.T) {
	p := New(1)
	defer p.Stop()
	collected := make(chan struct{})
	func() {
		body := make([]byte, 1<<20)
		runtime.AddCleanup(&body[0], func(struct{}) { close(collected) }, struct{}{})
		ran := make(chan struct{})
		p.Go(func() { body[0] = 1; close(ran) })
		<-ran
	}()
	eventually(t, "the goroutine did not wait after its job", func() bool { return p.idle.Load() == 1 })
	deadline := time.After(5 * time.Second)
	for {
		runtime.GC()
		select {
		case <-collected:
			return
		case <-deadline:
			t.Fatal("the job's body was not collected while its goroutine waited")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
