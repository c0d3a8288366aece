package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
)

// agentScript is the agent on every machine: a task whose text starts with
// "fail" fails with a message naming it, any other completes with a reply
// naming it, so every run's outcome is known before it is created.
const agentScript = `read -r text
case "$text" in
fail*) echo "refused: $text" >&2; exit 3 ;;
*) echo "done: $text" ;;
esac
`

// planned is one run of a load and the outcome its adapter gives it.
type planned struct {
	key, agentID, text string
	fails              bool
	id                 string
}

// loadResult is what creating a load met.
type loadResult struct {
	runs []*planned
	// unavailable counts 503 answers, each retried with the same key.
	unavailable atomic.Int64
	// transport counts requests that got no answer, retried the same way.
	transport atomic.Int64
	mu        sync.Mutex
	refused   []string
	created   atomic.Int64
}

func (l *loadResult) refuse(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refused = append(l.refused, fmt.Sprintf(format, args...))
}

var httpClient = &http.Client{}

// createLoad creates n runs spread over agents through every gateway copy
// by turns, with workers at once, as a client following docs/operations.md
// does: each run has its own idempotency key, and a 503 or a request without
// an answer is sent again with the same key. onCreated is called with the
// number of runs stored so far after each one.
func (d *deployment) createLoad(agents []*agent, n, workers int, onCreated func(int64)) *loadResult {
	res := &loadResult{}
	for i := range n {
		a := agents[i%len(agents)]
		p := &planned{key: fmt.Sprintf("load-%d", i), agentID: a.id, fails: i%4 == 3}
		p.text = fmt.Sprintf("ok %d", i)
		if p.fails {
			p.text = fmt.Sprintf("fail %d", i)
		}
		res.runs = append(res.runs, p)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if d.createOne(res, res.runs[i], d.gateways[i%len(d.gateways)]) {
					c := res.created.Add(1)
					if onCreated != nil {
						onCreated(c)
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return res
}

// createOne creates one run, retrying with its key until it is stored, and
// reports whether it was.
func (d *deployment) createOne(res *loadResult, p *planned, gateway string) bool {
	body, _ := json.Marshal(map[string]any{
		"target_agent_id": p.agentID, "input": map[string]any{"text": p.text}, "idempotency_key": p.key,
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		status, header, answer, err := d.post(gateway+"/task-runs", body)
		switch {
		case err != nil:
			res.transport.Add(1)
			wait(200 * time.Millisecond)
		case status == http.StatusCreated || status == http.StatusOK:
			var run mesh.TaskRun
			if err := json.Unmarshal(answer, &run); err != nil || run.ID == "" {
				res.refuse("%s: %d %s", p.key, status, answer)
				return false
			}
			p.id = run.ID
			return true
		case status == http.StatusServiceUnavailable:
			res.unavailable.Add(1)
			after, err := strconv.Atoi(header.Get("Retry-After"))
			if err != nil || after < 1 || !strings.Contains(string(answer), string(mesh.CodeUnavailable)) {
				res.refuse("%s: 503 with Retry-After %q: %s", p.key, header.Get("Retry-After"), answer)
				return false
			}
			// A client honours Retry-After; a second is the shortest it
			// can say, and this load waits at most that.
			wait(time.Second)
		default:
			res.refuse("%s: %d %s", p.key, status, answer)
			return false
		}
	}
	res.refuse("%s: not stored within a minute", p.key)
	return false
}

// wait is a client's pause between two attempts of one request.
func wait(d time.Duration) { <-time.After(d) }

// post sends body as the owner.
func (d *deployment) post(url string, body []byte) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+d.owner)
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, b, nil
}

// getRun reads a run through a gateway.
func (d *deployment) getRun(gateway, id string) (mesh.TaskRun, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gateway+"/task-runs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+d.owner)
	resp, err := httpClient.Do(req)
	if err != nil {
		return mesh.TaskRun{}, err
	}
	defer resp.Body.Close()
	var run mesh.TaskRun
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return run, fmt.Errorf("GET task run %s: %d %s", id, resp.StatusCode, b)
	}
	return run, json.NewDecoder(resp.Body).Decode(&run)
}

// runEvents is what the event stream says about one run.
type runEvents struct {
	created, claimed int
	terminal         []string
	createdAt        time.Time
	claimedAt        time.Time
}

// watcher reads every event of the load's agents from the event stream.
type watcher struct {
	t       testing.TB
	filters []string
	js      jetstream.JetStream
	mu      sync.Mutex
	cons    jetstream.ConsumeContext
	oc      jetstream.Consumer
	runs    map[string]*runEvents
	// seen is the stream sequence of the last event read.
	seen uint64
}

// watch reads the events of agents from the start of the event stream.
func (d *deployment) watch(conn *bus.Conn, agents []*agent) *watcher {
	d.t.Helper()
	w := &watcher{t: d.t, js: conn.JS, runs: map[string]*runEvents{}}
	for _, a := range agents {
		w.filters = append(w.filters, bus.AgentEventsFilter(a.id))
	}
	if err := w.consume(); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.cons.Stop()
	})
	return w
}

// consume reads the events after the last one read, with an ordered
// consumer of its own.
func (w *watcher) consume() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w.mu.Lock()
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: w.filters}
	if w.seen > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, w.seen+1
	}
	old := w.cons
	w.mu.Unlock()
	if old != nil {
		old.Stop()
	}
	oc, err := w.js.OrderedConsumer(ctx, bus.EventStream, cfg)
	if err != nil {
		return err
	}
	cons, err := oc.Consume(w.handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		w.t.Logf("the test's event reader: %v", err)
	}))
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.oc, w.cons = oc, cons
	w.mu.Unlock()
	return nil
}

// resumeIfStalled starts reading again after the last event read when
// the stream holds events past it and none was read since the last call
// (at). The test's own reader is an ordered consumer on one server: one
// lost with a killed node is not always replaced by the client.
func (w *watcher) resumeIfStalled(last *uint64) {
	w.mu.Lock()
	seen := w.seen
	w.mu.Unlock()
	if seen != *last {
		*last = seen
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := w.js.Stream(ctx, bus.EventStream)
	if err != nil || stream.CachedInfo().State.LastSeq <= seen {
		return
	}
	w.t.Logf("the test's event reader read nothing past stream sequence %d while the stream holds %d; reading again from there", seen, stream.CachedInfo().State.LastSeq)
	if err := w.consume(); err != nil {
		w.t.Logf("the test's event reader: %v", err)
	}
}

func (w *watcher) handle(msg jetstream.Msg) {
	typ := bus.EventType(msg.Headers())
	id := msg.Headers().Get("ce-subject")
	at, _ := time.Parse(time.RFC3339Nano, msg.Headers().Get("ce-time"))
	w.mu.Lock()
	defer w.mu.Unlock()
	if meta, err := msg.Metadata(); err == nil {
		if meta.Sequence.Stream <= w.seen {
			// Read already, by the consumer this one replaced.
			return
		}
		w.seen = meta.Sequence.Stream
	}
	if !strings.HasPrefix(typ, mesh.EventTypePrefix+"task_run.") {
		return
	}
	r := w.runs[id]
	if r == nil {
		r = &runEvents{}
		w.runs[id] = r
	}
	switch typ {
	case mesh.EventTaskRunCreated:
		r.created++
		r.createdAt = at
	case mesh.EventTaskRunClaimed:
		r.claimed++
		if r.claimedAt.IsZero() {
			r.claimedAt = at
		}
	case mesh.EventTaskRunCompleted, mesh.EventTaskRunFailed, mesh.EventTaskRunCanceled:
		r.terminal = append(r.terminal, typ)
	}
}

// lastStored is the type of the last event of a run the event stream holds.
func (w *watcher) lastStored(p *planned) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := w.js.Stream(ctx, bus.EventStream)
	if err != nil {
		return err.Error()
	}
	msg, err := stream.GetLastMsgForSubject(ctx, bus.EventSubject(p.agentID, string(mesh.KindTaskRun), p.id))
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s (stream sequence %d)", bus.EventType(msg.Header), msg.Sequence)
}

// ended counts the runs of ids with a terminal event.
func (w *watcher) ended(runs []*planned) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, p := range runs {
		if r := w.runs[p.id]; r != nil && len(r.terminal) > 0 {
			n++
		}
	}
	return n
}

// caughtUp reports whether the watcher has read every event of its agents
// stored so far.
func (w *watcher) caughtUp() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.mu.Lock()
	oc := w.oc
	w.mu.Unlock()
	info, err := oc.Info(ctx)
	if err != nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return info.NumPending == 0 && w.seen >= info.Delivered.Stream
}

// snapshot copies what the watcher knows.
func (w *watcher) snapshot() map[string]runEvents {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]runEvents, len(w.runs))
	for id, r := range w.runs {
		out[id] = *r
	}
	return out
}

// checkOutcomes reads every run through the gateways and checks it ended
// the way its adapter answered, then that the event stream holds exactly
// one creation and one terminal event for each, and no other run.
func (d *deployment) checkOutcomes(t *testing.T, res *loadResult, w *watcher) {
	t.Helper()
	var mu sync.Mutex
	var wrong []string
	next := make(chan *planned)
	var wg sync.WaitGroup
	for k := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				run, err := d.getRun(d.gateways[k%len(d.gateways)], p.id)
				if msg := outcomeProblem(p, run, err); msg != "" {
					mu.Lock()
					wrong = append(wrong, msg)
					mu.Unlock()
					d.mu.Lock()
					d.focus = append(d.focus, p.id)
					d.mu.Unlock()
				}
			}
		}()
	}
	for _, p := range res.runs {
		next <- p
	}
	close(next)
	wg.Wait()
	sort.Strings(wrong)
	if len(wrong) > 0 {
		t.Errorf("%d of %d runs did not end with their adapter's outcome:\n%s", len(wrong), len(res.runs), strings.Join(first(wrong, 20), "\n"))
	}

	deadline := time.Now().Add(20 * time.Second)
	for !w.caughtUp() {
		if time.Now().After(deadline) {
			t.Fatal("the event stream was never read to its end")
		}
		<-time.After(20 * time.Millisecond)
	}
	events := w.snapshot()
	var dup []string
	var maxPending time.Duration
	ours := map[string]bool{}
	for _, p := range res.runs {
		ours[p.id] = true
		r := events[p.id]
		if r.created != 1 || len(r.terminal) != 1 {
			dup = append(dup, fmt.Sprintf("%s (%s): %d created, terminal %v", p.id, p.key, r.created, r.terminal))
		}
		if pending := r.claimedAt.Sub(r.createdAt); pending > maxPending {
			maxPending = pending
		}
	}
	for id, r := range events {
		if !ours[id] {
			dup = append(dup, fmt.Sprintf("%s: a run the load never got back (%d created, terminal %v)", id, r.created, r.terminal))
		}
	}
	sort.Strings(dup)
	if len(dup) > 0 {
		t.Errorf("%d runs without exactly one creation and one terminal event:\n%s", len(dup), strings.Join(first(dup, 20), "\n"))
	}
	t.Logf("%d runs: %d answered 503 and retried, %d without an answer retried; longest wait for a claim %s",
		len(res.runs), res.unavailable.Load(), res.transport.Load(), maxPending.Round(time.Millisecond))
}

// outcomeProblem says how run differs from what its adapter answered.
func outcomeProblem(p *planned, run mesh.TaskRun, err error) string {
	if err != nil {
		return fmt.Sprintf("%s (%s): %v", p.id, p.key, err)
	}
	if p.fails {
		if run.Status != mesh.StatusFailed || run.Error == nil || !strings.Contains(run.Error.Message, "refused: "+p.text) {
			return fmt.Sprintf("%s (%s): %s %+v, want failed with %q", p.id, p.key, run.Status, run.Error, "refused: "+p.text)
		}
		return ""
	}
	var out struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(run.Output, &out)
	if run.Status != mesh.StatusCompleted || out.Text != "done: "+p.text {
		return fmt.Sprintf("%s (%s): %s output %s error %+v, want completed with %q", p.id, p.key, run.Status, run.Output, run.Error, "done: "+p.text)
	}
	return ""
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… and %d more", len(s)-n))
	}
	return s
}

// waitEnded waits until every run of the load has a terminal event.
func (d *deployment) waitEnded(t *testing.T, res *loadResult, w *watcher, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var seen uint64
	stallCheck := time.Now().Add(10 * time.Second)
	for w.ended(res.runs) < len(res.runs) {
		if time.Now().After(stallCheck) {
			w.resumeIfStalled(&seen)
			stallCheck = time.Now().Add(10 * time.Second)
		}
		if time.Now().After(deadline) {
			events := w.snapshot()
			var open []string
			for _, p := range res.runs {
				if r := events[p.id]; len(r.terminal) == 0 {
					run, err := d.getRun(d.gateways[0], p.id)
					open = append(open, fmt.Sprintf("%s (%s): %s attempt %d %v; events read %+v; last stored event %s",
						p.id, p.key, run.Status, run.Attempt, err, r, w.lastStored(p)))
				}
			}
			t.Fatalf("%d of %d runs never ended while their runtimes were online:\n%s", len(open), len(res.runs), strings.Join(first(open, 20), "\n"))
		}
		<-time.After(50 * time.Millisecond)
	}
}
