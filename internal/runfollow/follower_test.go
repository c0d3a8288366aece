package runfollow

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/mesh"
)

// stream is a provisioned event stream on an in-process server, with a
// publisher of run and artifact events.
type stream struct {
	t    testing.TB
	conn *bus.Conn
	src  *Source
	pub  *bus.Publisher
	ctx  context.Context
}

func newStream(t testing.TB, cfg Config) *stream {
	t.Helper()
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	conn, err := bus.Connect(ctx, bus.ConnConfig{Server: srv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.NC.Close() })
	if err := bus.Provision(ctx, conn.JS, bus.ProvisionConfig{}); err != nil {
		t.Fatal(err)
	}
	if cfg.Stream == "" {
		cfg.Stream = bus.EventStream
	}
	return &stream{t: t, conn: conn, src: NewSource(conn, cfg), pub: bus.NewPublisher(conn.JS, "test"), ctx: ctx}
}

// run publishes revision rev of a run.
func (s *stream) run(agentID, runID string, rev uint64) {
	s.t.Helper()
	err := s.pub.Publish(s.ctx, bus.Event{
		Type: mesh.EventTaskRunProgress, Kind: mesh.KindTaskRun, AgentID: agentID, Subject: runID,
		ID: fmt.Sprintf("%s-%d", runID, rev), Sequence: rev,
		Data: mesh.TaskRun{ID: runID, TargetAgentID: agentID, Status: mesh.StatusRunning, Revision: rev},
	})
	if err != nil {
		s.t.Fatal(err)
	}
}

// artifact publishes an artifact of a run.
func (s *stream) artifact(agentID, runID, artifactID string) {
	s.t.Helper()
	err := s.pub.Publish(s.ctx, bus.Event{
		Type: mesh.EventArtifactCreated, Kind: mesh.KindArtifact, AgentID: agentID, Subject: artifactID,
		Data: mesh.Artifact{ID: artifactID, TaskRunID: runID, AgentID: agentID, Filename: "a.txt"},
	})
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s *stream) follow(subjects []string, pos Position) *Follower {
	s.t.Helper()
	f, err := s.src.Follow(s.ctx, subjects, pos)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(f.Stop)
	return f
}

// next reads n events, failing the test if they do not come in time.
func next(t testing.TB, f *Follower, n int) []*Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var evs []*Event
	for range n {
		e, err := f.Next(ctx)
		if err != nil {
			t.Fatalf("event %d of %d: %v", len(evs)+1, n, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// nothingMore checks that no further event comes within d.
func nothingMore(t testing.TB, f *Follower, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if e, err := f.Next(ctx); err == nil {
		t.Fatalf("unexpected event %s #%d", e.Subject, e.Seq)
	}
}

func revisions(t testing.TB, evs []*Event) []uint64 {
	t.Helper()
	var revs []uint64
	for _, e := range evs {
		run, err := e.TaskRun()
		if err != nil {
			t.Fatalf("event %s: %v", e.Subject, err)
		}
		revs = append(revs, run.Revision)
	}
	return revs
}

func TestFollow_OneRunsEventsInOrderAndNoOtherRuns(t *testing.T) {
	s := newStream(t, Config{})
	agent, runA, runB := mesh.NewID(), mesh.NewID(), mesh.NewID()
	s.run(agent, runA, 1)
	f := s.follow(RunSubjects(agent, runA, false), Now())
	for rev := uint64(2); rev <= 40; rev++ {
		s.run(agent, runA, rev)
		s.run(agent, runB, rev)
	}
	evs := next(t, f, 39)
	for i, rev := range revisions(t, evs) {
		if rev != uint64(i+2) {
			t.Fatalf("event %d has revision %d, want %d (the earlier revision 1 is before Now)", i, rev, i+2)
		}
		if i > 0 && evs[i].Seq <= evs[i-1].Seq {
			t.Fatalf("stream sequence goes back: %d after %d", evs[i].Seq, evs[i-1].Seq)
		}
	}
	nothingMore(t, f, 200*time.Millisecond)
}

func TestFollow_EventsStoredWhileNobodyReadsComeInOrder(t *testing.T) {
	s := newStream(t, Config{Batch: 4})
	agent, run := mesh.NewID(), mesh.NewID()
	f := s.follow(RunSubjects(agent, run, false), Now())
	// More events than one read returns, published before anyone reads.
	for rev := uint64(1); rev <= 30; rev++ {
		s.run(agent, run, rev)
	}
	for i, rev := range revisions(t, next(t, f, 30)) {
		if rev != uint64(i+1) {
			t.Fatalf("event %d has revision %d, want %d", i, rev, i+1)
		}
	}
}

func TestFollow_ResumesAfterThePositionAReaderSentBack(t *testing.T) {
	s := newStream(t, Config{})
	agent, run := mesh.NewID(), mesh.NewID()
	for rev := uint64(1); rev <= 10; rev++ {
		s.run(agent, run, rev)
	}
	first := s.follow(RunSubjects(agent, run, false), After(0))
	seen := next(t, first, 4)
	first.Stop()
	// Published while no one followed.
	for rev := uint64(11); rev <= 12; rev++ {
		s.run(agent, run, rev)
	}
	again := s.follow(RunSubjects(agent, run, false), After(seen[3].Seq))
	revs := revisions(t, next(t, again, 8))
	for i, rev := range revs {
		if rev != uint64(i+5) {
			t.Fatalf("resumed events %v, want revisions 5 to 12", revs)
		}
	}
	nothingMore(t, again, 200*time.Millisecond)
}

func TestFollow_SinceATime(t *testing.T) {
	s := newStream(t, Config{})
	agent, run := mesh.NewID(), mesh.NewID()
	for rev := uint64(1); rev <= 3; rev++ {
		s.run(agent, run, rev)
	}
	stored := next(t, s.follow(RunSubjects(agent, run, false), After(0)), 3)
	since := stored[1].Time
	if !since.After(stored[0].Time) {
		t.Fatalf("events stored at the same time %v", since)
	}
	f := s.follow(RunSubjects(agent, run, false), Since(since))
	if revs := revisions(t, next(t, f, 2)); revs[0] != 2 || revs[1] != 3 {
		t.Fatalf("events since %v: revisions %v, want [2 3]", since, revs)
	}
}

func TestFollow_SeveralRunsInStreamOrder(t *testing.T) {
	s := newStream(t, Config{Batch: 3})
	agentA, agentB := mesh.NewID(), mesh.NewID()
	runA, runB := mesh.NewID(), mesh.NewID()
	f := s.follow(append(RunSubjects(agentA, runA, false), RunSubjects(agentB, runB, false)...), Now())
	want := map[string]uint64{}
	for rev := uint64(1); rev <= 20; rev++ {
		s.run(agentA, runA, rev)
		if rev%3 == 0 {
			s.run(agentB, runB, rev)
		}
		s.run(agentA, mesh.NewID(), rev) // another run of the same agent
	}
	evs := next(t, f, 26)
	for i, e := range evs {
		run, err := e.TaskRun()
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && e.Seq <= evs[i-1].Seq {
			t.Fatalf("event %d: stream sequence %d after %d", i, e.Seq, evs[i-1].Seq)
		}
		if run.Revision <= want[run.ID] {
			t.Fatalf("run %s: revision %d after %d", run.ID, run.Revision, want[run.ID])
		}
		want[run.ID] = run.Revision
	}
	if want[runA] != 20 || want[runB] != 18 || len(want) != 2 {
		t.Fatalf("last revisions %v, want run A at 20 and run B at 18, nothing else", want)
	}
	nothingMore(t, f, 200*time.Millisecond)
}

func TestFollow_ARunWithItsArtifacts(t *testing.T) {
	s := newStream(t, Config{})
	agent, run, other := mesh.NewID(), mesh.NewID(), mesh.NewID()
	f := s.follow(RunSubjects(agent, run, true), Now())
	s.run(agent, run, 1)
	s.artifact(agent, other, "art-other")
	s.artifact(agent, run, "art-mine")
	s.run(agent, run, 2)
	evs := next(t, f, 4)
	var got []string
	for _, e := range evs {
		if a, ok := ArtifactOf(e, run); ok {
			got = append(got, a.ID)
			continue
		}
		if r, err := e.TaskRun(); err == nil {
			got = append(got, fmt.Sprintf("rev %d", r.Revision))
		}
	}
	if fmt.Sprint(got) != "[rev 1 art-mine rev 2]" {
		t.Fatalf("told %v, want [rev 1 art-mine rev 2]", got)
	}
}

func TestFollow_StopEndsAWaitingNextAndUnsubscribes(t *testing.T) {
	s := newStream(t, Config{})
	// The source's one subscription for the answers to reads stays.
	s.follow([]string{"mesh.evt.>"}, Now()).Stop()
	before := s.conn.NC.NumSubscriptions()
	f, err := s.src.Follow(s.ctx, RunSubjects(mesh.NewID(), mesh.NewID(), true), Now())
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := f.Next(context.Background())
		errc <- err
	}()
	f.Stop()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrStopped) {
			t.Fatalf("Next after Stop: %v, want ErrStopped", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next still waits after Stop")
	}
	if n := s.conn.NC.NumSubscriptions(); n != before {
		t.Fatalf("%d subscriptions after Stop, %d before Follow", n, before)
	}
}

func TestFollow_ALostWakeUpIsCaughtByThePoll(t *testing.T) {
	s := newStream(t, Config{Poll: 100 * time.Millisecond})
	agent, run := mesh.NewID(), mesh.NewID()
	f := s.follow(RunSubjects(agent, run, false), Now())
	nothingMore(t, f, 50*time.Millisecond)
	// The core subscription gone, nothing wakes the follower.
	for i, flt := range f.filters {
		s.src.wakes.unlisten(flt.subject, f, i)
	}
	f.listening = 0
	s.run(agent, run, 1)
	if revs := revisions(t, next(t, f, 1)); revs[0] != 1 {
		t.Fatalf("revision %d, want 1", revs[0])
	}
}

// TestFollow_CreatesNoConsumer: followers read by direct get, which a region
// cut off from the JetStream meta group can still answer; creating a
// consumer would need that group.
func TestFollow_CreatesNoConsumer(t *testing.T) {
	s := newStream(t, Config{})
	agent, run := mesh.NewID(), mesh.NewID()
	var fs []*Follower
	for _, pos := range []Position{Now(), After(0), Since(time.Now().Add(-time.Minute))} {
		fs = append(fs, s.follow(RunSubjects(agent, run, true), pos))
	}
	s.run(agent, run, 1)
	s.artifact(agent, run, "art")
	for _, f := range fs {
		next(t, f, 2)
	}
	info, err := s.conn.JS.Stream(s.ctx, bus.EventStream)
	if err != nil {
		t.Fatal(err)
	}
	st, err := info.Info(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.State.Consumers != 0 {
		t.Fatalf("the event stream has %d consumers, want 0", st.State.Consumers)
	}
	if !st.Config.AllowDirect {
		t.Fatal("the event stream does not allow direct gets")
	}
}

func TestFollow_MissingStreamIsAnError(t *testing.T) {
	s := newStream(t, Config{Stream: "NO_SUCH_STREAM"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.src.Follow(ctx, []string{"mesh.evt.>"}, Now()); err == nil {
		t.Fatal("Follow of a missing stream succeeded")
	}
}

// TestFollow_FollowersOfOneSubjectShareItsSubscription: a hundred streams of
// every event take one copy of each event from the server, and one follower
// stopping leaves the others woken.
func TestFollow_FollowersOfOneSubjectShareItsSubscription(t *testing.T) {
	s := newStream(t, Config{})
	agent, run := mesh.NewID(), mesh.NewID()
	s.follow([]string{"mesh.evt.>"}, Now()).Stop() // the answers' subscription
	before := s.conn.NC.NumSubscriptions()
	first := s.follow(RunSubjects(agent, run, false), Now())
	second := s.follow(RunSubjects(agent, run, false), Now())
	if n := s.conn.NC.NumSubscriptions() - before; n != 1 {
		t.Fatalf("two followers of one subject hold %d subscriptions, want 1", n)
	}
	first.Stop()
	s.run(agent, run, 1)
	if revs := revisions(t, next(t, second, 1)); revs[0] != 1 {
		t.Fatalf("revision %d, want 1", revs[0])
	}
	second.Stop()
	if n := s.conn.NC.NumSubscriptions(); n != before {
		t.Fatalf("%d subscriptions after both stopped, %d before", n, before)
	}
}

// TestFollow_FollowersOfOneSubjectShareTheirReads: a hundred streams of
// every event read each event from the stream about once between them, not
// once each, and each still tells every event in order.
func TestFollow_FollowersOfOneSubjectShareTheirReads(t *testing.T) {
	const followers, events = 100, 20
	// No poll in the test's time: a follower answered with a read older
	// than its wake-up would not tell its event.
	s := newStream(t, Config{Poll: time.Hour})
	agent := mesh.NewID()
	fs := make([]*Follower, followers)
	for i := range fs {
		fs[i] = s.follow(bus.EventStreamSubjects(), Now())
	}
	reads := s.src.reads.Load()
	runs := make([]string, events)
	for i := range runs {
		runs[i] = mesh.NewID()
		s.run(agent, runs[i], 1)
		// Every follower tells the event before the next is published, so
		// no read can take two events at once.
		for _, f := range fs {
			if r, err := next(t, f, 1)[0].TaskRun(); err != nil || r.ID != runs[i] {
				t.Fatalf("event %d: run %v (%v), want %s", i, r, err, runs[i])
			}
		}
	}
	// One read per event, and a few more when a wake-up comes before the
	// stream has stored its event; a read per follower would be 2000.
	if n := s.src.reads.Load() - reads; n > 5*events {
		t.Fatalf("%d followers made %d reads for %d events, want at most %d", followers, n, events, 5*events)
	}
}

// TestFollow_FollowersOfOneSubjectFromDifferentPositions: followers of one
// subject that started at different places (resumed, from the start, from
// now) share reads and each tells its own events, in order.
func TestFollow_FollowersOfOneSubjectFromDifferentPositions(t *testing.T) {
	s := newStream(t, Config{Batch: 3, Poll: time.Hour})
	agent, run := mesh.NewID(), mesh.NewID()
	subjects := RunSubjects(agent, run, false)
	for rev := uint64(1); rev <= 10; rev++ {
		s.run(agent, run, rev)
	}
	fifth := next(t, s.follow(subjects, After(0)), 5)[4]
	fs := map[string]*Follower{
		"start":  s.follow(subjects, After(0)),
		"resume": s.follow(subjects, After(fifth.Seq)),
		"now":    s.follow(subjects, Now()),
	}
	first := map[string]uint64{"start": 1, "resume": 6, "now": 11}
	for rev := uint64(11); rev <= 20; rev++ {
		s.run(agent, run, rev)
	}
	for name, f := range fs {
		revs := revisions(t, next(t, f, int(21-first[name])))
		for i, rev := range revs {
			if rev != first[name]+uint64(i) {
				t.Fatalf("follower from %s told revisions %v, want %d to 20", name, revs, first[name])
			}
		}
		nothingMore(t, f, 100*time.Millisecond)
	}
}
