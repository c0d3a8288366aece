package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/runfollow"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go/jetstream"
)

// eventFilter is what GET /events streams.
type eventFilter struct {
	agentID   string
	taskRunID string
	types     map[string]bool
}

func (f *eventFilter) subjects() []string {
	if f.taskRunID != "" {
		// A run's artifacts are events of kind artifact; they are matched on
		// their task_run_id below.
		return []string{
			bus.EventFilter(f.agentID, string(mesh.KindTaskRun), f.taskRunID),
			bus.EventFilter(f.agentID, string(mesh.KindArtifact), ""),
		}
	}
	if f.agentID != "" {
		return []string{bus.AgentEventsFilter(f.agentID)}
	}
	return bus.EventStreamSubjects()
}

func (f *eventFilter) match(typ string, data []byte) bool {
	if len(f.types) > 0 && !f.types[typ] {
		return false
	}
	if f.taskRunID != "" && strings.HasPrefix(typ, mesh.EventTypePrefix+string(mesh.KindArtifact)+".") {
		var a struct {
			TaskRunID string `json:"task_run_id"`
		}
		_ = json.Unmarshal(data, &a)
		return a.TaskRunID == f.taskRunID
	}
	return true
}

func parseEventFilter(r *http.Request) (*eventFilter, error) {
	q := r.URL.Query()
	f := &eventFilter{agentID: q.Get("agent_id"), taskRunID: q.Get("task_run_id"), types: map[string]bool{}}
	if f.agentID != "" && !mesh.ValidID(f.agentID) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "agent_id is not a valid id")
	}
	if f.taskRunID != "" && !mesh.ValidID(f.taskRunID) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "task_run_id is not a valid id")
	}
	for _, t := range q["type"] {
		for _, one := range strings.Split(t, ",") {
			one = strings.TrimSpace(one)
			if one == "" {
				continue
			}
			if !strings.HasPrefix(one, mesh.EventTypePrefix) {
				one = mesh.EventTypePrefix + one
			}
			if !knownEventType(one) {
				return nil, mesh.Errorf(mesh.CodeInvalidRequest, "unknown event type %q", one)
			}
			f.types[one] = true
		}
	}
	return f, nil
}

func knownEventType(t string) bool {
	_, ok := mesh.LookupEventType(t)
	return ok
}

// eventStream is where a GET /events stream reads: an event stream, the
// source that reads it, and the prefix of its event ids. Events of one
// agent are read where they are stored first, in the agent's home region's
// stream (a stream in the region that answers for them, and one that goes
// on while the origin is down); every agent's, from the origin's, which
// gathers every region's. An event id is the event's sequence in its
// stream, "<region>:"-prefixed for a region's own stream, so a client that
// resumes is taken back to the stream it read.
type eventStream struct {
	name   string
	src    *runfollow.Source
	prefix string
}

// parseEventID reads an event id GET /events sent: a stream sequence,
// "<region>:"-prefixed for a region's own stream ("" for the origin's
// gathered log).
func parseEventID(id string) (region string, seq uint64, err error) {
	region, seqText, regional := strings.Cut(id, ":")
	if !regional {
		seqText, region = region, ""
	}
	seq, err = strconv.ParseUint(seqText, 10, 64)
	if err != nil || (regional && bus.ValidRegion(region) != nil) {
		return "", 0, mesh.Errorf(mesh.CodeInvalidRequest, "Last-Event-ID must be an event id from this stream")
	}
	return region, seq, nil
}

// openEventStream chooses the stream a request reads and where it starts:
// after Last-Event-ID when reconnecting (in the stream that id came from),
// at ?since= (RFC 3339 time or a duration ago), or with new events only.
func (g *Gateway) openEventStream(r *http.Request, f *eventFilter) (*eventStream, runfollow.Position, error) {
	ctx := r.Context()
	if last := lastEventID(r); last != "" {
		region, seq, err := parseEventID(last)
		if err != nil {
			return nil, runfollow.Position{}, err
		}
		es := &eventStream{name: bus.EventStream, src: g.runs.Gathered()}
		if region != "" {
			// The id is the caller's: a source is kept only for a stream
			// that exists.
			name, err := bus.EventStreamIn(ctx, g.js, region)
			if err != nil {
				return nil, runfollow.Position{}, err
			}
			if _, err := g.js.Stream(ctx, name); errors.Is(err, jetstream.ErrStreamNotFound) {
				return nil, runfollow.Position{}, mesh.Errorf(mesh.CodeInvalidRequest, "Last-Event-ID names region %s, which keeps no events", region)
			} else if err != nil {
				return nil, runfollow.Position{}, err
			}
			src, err := g.runs.In(ctx, region)
			if err != nil {
				return nil, runfollow.Position{}, err
			}
			es = &eventStream{name: src.Stream(), src: src, prefix: region + ":"}
		}
		return es, runfollow.After(seq), nil
	}
	es := &eventStream{name: bus.EventStream, src: g.runs.Gathered()}
	if f.agentID != "" {
		src, region, err := g.runs.Of(ctx, f.agentID)
		if err != nil && !errors.Is(err, mesh.ErrNotFound) {
			return nil, runfollow.Position{}, err
		}
		if err == nil && src.Stream() != bus.EventStream {
			es = &eventStream{name: src.Stream(), src: src, prefix: region + ":"}
		}
	}
	since, err := parseSince(r)
	if err != nil {
		return nil, runfollow.Position{}, err
	}
	if since != nil {
		return es, runfollow.Since(*since), nil
	}
	return es, runfollow.Now(), nil
}

// lastEventID is the id a reconnecting client sends back (Last-Event-ID,
// or ?last_event_id= for a client that cannot set headers).
func lastEventID(r *http.Request) string {
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		return last
	}
	return r.URL.Query().Get("last_event_id")
}

// parseSince reads ?since= (an RFC 3339 time or a duration ago); nil
// without one.
func parseSince(r *http.Request) (*time.Time, error) {
	since := r.URL.Query().Get("since")
	if since == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, since)
	if err != nil {
		d, derr := time.ParseDuration(since)
		if derr != nil || d < 0 {
			return nil, mesh.Errorf(mesh.CodeInvalidRequest, "since must be an RFC 3339 time or a duration like 10m")
		}
		t = time.Now().Add(-d)
	}
	return &t, nil
}

// streamEvents serves GET /events: matching CloudEvents as Server-Sent Events
// (structured JSON, one per event, "id:" the stream sequence for resuming).
func (g *Gateway) streamEvents(w http.ResponseWriter, r *http.Request) {
	f, err := parseEventFilter(r)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	g.serveEvents(w, r, f)
}

// streamRuntimeEvents serves GET /agent-runtimes/runtime/events: the same
// stream confined to the calling runtime's own agent (cancellations reach an
// HTTP runtime this way).
func (g *Gateway) streamRuntimeEvents(w http.ResponseWriter, r *http.Request) {
	f, err := parseEventFilter(r)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	id := runtimeOf(r)
	if f.agentID != "" && f.agentID != id.AgentID {
		g.writeError(w, r, mesh.Errorf(mesh.CodeForbidden, "a runtime may only follow its own agent's events"))
		return
	}
	f.agentID = id.AgentID
	g.serveEvents(w, r, f)
}

func (g *Gateway) serveEvents(w http.ResponseWriter, r *http.Request, f *eventFilter) {
	if pos, since, ok, err := g.everyRegionStart(r, f); err != nil {
		g.writeError(w, r, err)
		return
	} else if ok {
		g.serveEveryRegion(w, r, f, pos, since)
		return
	}
	stream, pos, err := g.openEventStream(r, f)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	events, err := stream.src.Follow(ctx, f.subjects(), pos)
	if err != nil {
		g.writeError(w, r, fmt.Errorf("follow events: %w", err))
		return
	}
	defer events.Stop()
	rc := startEventStream(w)
	pumpEvents(g, ctx, w, rc, runfollow.Feed(ctx, events.Next), nil, nil, func(m *runfollow.Event) error {
		return writeSSE(w, stream.prefix, g.sse.of(stream.name).get(r.Context(), m), f)
	})
}

// pumpEvents writes a GET /events stream until the request, the gateway or
// next ends: each item of next (send writes it), a ping every
// SSEHeartbeat, and what say writes each time wake fires (nil: never).
func pumpEvents[T any](g *Gateway, ctx context.Context, w http.ResponseWriter, rc *http.ResponseController,
	next <-chan T, wake <-chan struct{}, say func() bool, send func(T) error) {
	ping := time.NewTicker(g.cfg.SSEHeartbeat)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.closing:
			return
		case <-ping.C:
			if !sendComment(w, rc, "ping") {
				return
			}
		case <-wake:
			if !say() {
				return
			}
		case item, ok := <-next:
			if !ok || send(item) != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// startEventStream answers a GET /events request with an event stream: its
// headers, the client's reconnection delay, and the comment that says it is
// connected.
func startEventStream(w http.ResponseWriter) *http.ResponseController {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	fmt.Fprint(w, "retry: 2000\n: connected\n\n")
	_ = rc.Flush()
	return rc
}

// sendComment sends a comment line and reports whether it reached the
// connection.
func sendComment(w http.ResponseWriter, rc *http.ResponseController, text string) bool {
	fmt.Fprintf(w, ": %s\n\n", text)
	return rc.Flush() == nil
}

// writeSSE sends an event to a stream if its filter matches it.
func writeSSE(w http.ResponseWriter, idPrefix string, e *sseEncoding, f *eventFilter) error {
	if !e.ok || !f.match(e.typ, e.data) {
		return nil
	}
	_, err := fmt.Fprintf(w, "id: %s%d\ndata: %s\n\n", idPrefix, e.seq, e.body)
	return err
}
