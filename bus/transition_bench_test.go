package bus

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The benchmarks below weigh the JetStream writes of one task-run transition
// (a record written with compare-and-set, and its event) in the ways the
// server offers, on an embedded server with file storage like the
// platform's. Each reports the CPU the whole process (server included)
// spent per transition, since the machine's cores, not the wait, bound the
// task-run cycle. docs/benchmarks.md gives the figures and what they decided.

// transitionRecord is about the size of a running task run's record.
var transitionRecord = []byte(`{"id":"0b5e7f4e-6a57-4cbe-9d0f-2f4a4f0a4d11","target_agent_id":"1c6f8a5f-7b68-4dcf-8e1a-3a5b5a1b5e22","status":"running","input":{"text":"bench"},"attempt":1,"runtime_id":"2d7a9b6a-8c79-4ed0-9f2b-4b6c6b2c6f33","created_at":"2026-11-25T05:00:00Z"}`)

// BenchmarkTransition_RecordAndEvent is what the task queue does: the
// record's compare-and-set write, then its event into the event stream,
// each acknowledged.
func BenchmarkTransition_RecordAndEvent(b *testing.B) {
	benchTransition(b, false, 1, recordAndEvent)
}

// BenchmarkTransition_RecordAndEventSixteenInFlight is the same with 16
// runs' transitions under way at once on the connection, as in the
// cycle phase (8 agents, 2 runs each): what a service's concurrent
// handlers sharing one connection get from the pipelining it allows.
func BenchmarkTransition_RecordAndEventSixteenInFlight(b *testing.B) {
	benchTransition(b, false, 16, recordAndEvent)
}

// recordAndEvent writes a run's record with compare-and-set, then its
// event, each acknowledged.
func recordAndEvent(ctx context.Context, t *transitionBench, key string, last uint64) (uint64, error) {
	seq, err := t.putRecord(ctx, key, last)
	if err != nil {
		return 0, err
	}
	_, err = t.js.Publish(ctx, "evt."+key+"."+strconv.FormatUint(seq, 10), transitionRecord)
	return seq, err
}

// BenchmarkTransition_RecordAndUnacknowledgedEvent publishes the event
// without asking for its acknowledgement: the most a batch of events with
// periodic acknowledgements (JetStream's fast batches) could save.
func BenchmarkTransition_RecordAndUnacknowledgedEvent(b *testing.B) {
	benchTransition(b, false, 1, func(ctx context.Context, t *transitionBench, key string, last uint64) (uint64, error) {
		seq, err := t.putRecord(ctx, key, last)
		if err != nil {
			return 0, err
		}
		return seq, t.nc.Publish("evt."+key+"."+strconv.FormatUint(seq, 10), transitionRecord)
	})
}

// BenchmarkTransition_RecordOnly is the floor: the record's write alone, as
// if its event cost nothing.
func BenchmarkTransition_RecordOnly(b *testing.B) {
	benchTransition(b, false, 1, func(ctx context.Context, t *transitionBench, key string, last uint64) (uint64, error) {
		return t.putRecord(ctx, key, last)
	})
}

// BenchmarkTransition_AtomicBatch writes the record and its event in one
// atomic batch into one stream (the event stream would source the events
// from it): one acknowledgement instead of two. The sourcing is not waited
// for, so its share of the cost is partly left out.
func BenchmarkTransition_AtomicBatch(b *testing.B) {
	n := 0
	benchTransition(b, true, 1, func(ctx context.Context, t *transitionBench, key string, last uint64) (uint64, error) {
		n++
		id := "b" + strconv.Itoa(n)
		rec := t.recordMsg(key, last)
		rec.Header.Set("Nats-Batch-Id", id)
		rec.Header.Set("Nats-Batch-Sequence", "1")
		if err := t.nc.PublishMsg(rec); err != nil {
			return 0, err
		}
		ev := nats.NewMsg("out." + key + "." + strconv.Itoa(n))
		ev.Data = transitionRecord
		ev.Header.Set("Nats-Batch-Id", id)
		ev.Header.Set("Nats-Batch-Sequence", "2")
		ev.Header.Set("Nats-Batch-Commit", "1")
		resp, err := t.nc.RequestMsgWithContext(ctx, ev)
		if err != nil {
			return 0, err
		}
		var ack struct {
			Seq   uint64              `json:"seq"`
			Error *jetstream.APIError `json:"error"`
		}
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return 0, err
		}
		if ack.Error != nil {
			return 0, ack.Error
		}
		return ack.Seq - 1, nil // the record is the batch's first message
	})
}

type transitionBench struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func (t *transitionBench) recordMsg(key string, last uint64) *nats.Msg {
	m := nats.NewMsg("rec." + key)
	m.Data = transitionRecord
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last, 10))
	return m
}

func (t *transitionBench) putRecord(ctx context.Context, key string, last uint64) (uint64, error) {
	ack, err := t.js.PublishMsg(ctx, t.recordMsg(key, last))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// benchTransition runs transition three times per run (created, claimed,
// completed), inFlight runs at a time, each run's transitions one after
// the other, and reports the CPU per transition.
func benchTransition(b *testing.B, atomicBatch bool, inFlight int, transition func(ctx context.Context, t *transitionBench, key string, last uint64) (uint64, error)) {
	srv, err := embedded.Start(embedded.Config{StoreDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	nc, err := nats.Connect("", nats.InProcessServer(srv.NATS()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	records := jetstream.StreamConfig{Name: "RECORDS", Subjects: []string{"rec.>"}, MaxMsgsPerSubject: 1}
	events := jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"evt.>"}}
	if atomicBatch {
		records.Subjects = append(records.Subjects, "out.>")
		records.AllowAtomicPublish = true
		events.Subjects = nil
		events.Sources = []*jetstream.StreamSource{{Name: "RECORDS", FilterSubject: "out.>"}}
	}
	for _, cfg := range []jetstream.StreamConfig{records, events} {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			b.Fatal(err)
		}
	}
	t := &transitionBench{nc: nc, js: js}
	b.ResetTimer()
	cpu := processCPU()
	spread(b, inFlight, func(w int) func() error {
		run, step := 0, 0
		var last uint64
		return func() error {
			if step == 0 {
				run, last = run+1, 0
			}
			var err error
			last, err = transition(ctx, t, "w"+strconv.Itoa(w)+"r"+strconv.Itoa(run), last)
			step = (step + 1) % 3
			return err
		}
	})
	if !atomicBatch {
		// Every event stored, so that the server's work on them is counted.
		for {
			info, err := js.Stream(ctx, "EVENTS")
			if err != nil {
				b.Fatal(err)
			}
			if n := info.CachedInfo().State.Msgs; n == 0 || n >= uint64(b.N) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// spread runs b.N operations in all, workers at a time: each worker runs
// the next one with the operation newOp made for it until none is left.
// The first error fails b.
func spread(b *testing.B, workers int, newOp func(worker int) func() error) {
	var handed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		op := newOp(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for handed.Add(1) <= int64(b.N) {
				if err := op(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
