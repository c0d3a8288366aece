package restclient

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Event is one Server-Sent Event of GET /events: its id (for resuming) and
// its data (a CloudEvent in structured JSON).
type Event struct {
	ID   string
	Data []byte
}

// Event stream paths.
const (
	// PathEvents streams every event the owner may see.
	PathEvents = "/events"
	// PathRuntimeEvents streams the calling runtime's own agent's events.
	PathRuntimeEvents = "/agent-runtimes/runtime/events"
)

// StreamEvents follows an event stream (PathEvents or PathRuntimeEvents) with
// the given filters, calling fn for each event, and reconnects with
// Last-Event-ID (so nothing is missed or repeated) until ctx ends or fn
// returns an error. A stream that ends before it delivered any event resumes
// from the platform's time when it first opened (the HTTP Date of its
// answer), so events published while no stream was open are not missed
// either; at worst those of the second before it opened come again.
func (c *Client) StreamEvents(ctx context.Context, path string, query url.Values, fn func(Event) error) error {
	var st streamState
	backoff := minStreamBackoff
	for {
		st.connected = false
		err := c.streamOnce(ctx, path, query, &st, fn)
		if ctx.Err() != nil {
			return nil
		}
		var stop fnError
		if errors.As(err, &stop) {
			return stop.err
		}
		if s := StatusOf(err); s >= 400 && s < 500 {
			return err
		}
		if st.connected {
			// A stream that was up is retried promptly: the backoff is for
			// a platform that does not answer.
			backoff = minStreamBackoff
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxStreamBackoff)
	}
}

// minStreamBackoff is the first wait before reconnecting an event stream,
// maxStreamBackoff the longest: a stream follows the platform back within a
// second of its return (a runtime's cancellations arrive over it), at the
// cost of one connection attempt a second while the platform is away.
const (
	minStreamBackoff = 250 * time.Millisecond
	maxStreamBackoff = time.Second
)

// streamState is what a reconnection resumes from.
type streamState struct {
	// lastID is the id of the last event delivered.
	lastID string
	// opened is the platform's time when the first stream opened; zero
	// until then.
	opened time.Time
	// connected says whether the latest attempt got a stream.
	connected bool
}

type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

func (c *Client) streamOnce(ctx context.Context, path string, query url.Values, st *streamState, fn func(Event) error) error {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	q := query
	if st.lastID == "" && !st.opened.IsZero() && query.Get("since") == "" {
		q = url.Values{}
		for k, v := range query {
			q[k] = v
		}
		q.Set("since", st.opened.UTC().Format(time.RFC3339))
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", c.agent)
	if st.lastID != "" {
		req.Header.Set("Last-Event-ID", st.lastID)
	}
	c.auth(req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return decodeError(resp)
	}
	st.connected = true
	if st.opened.IsZero() {
		st.opened = time.Now()
		if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
			st.opened = d
		}
	}
	return readSSE(resp.Body, func(ev Event) error {
		if ev.ID != "" {
			st.lastID = ev.ID
		}
		if err := fn(ev); err != nil {
			return fnError{err}
		}
		return nil
	})
}

// readSSE parses a text/event-stream body.
func readSSE(r io.Reader, fn func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var ev Event
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				ev.Data = []byte(strings.Join(data, "\n"))
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, data = Event{}, nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id:"):
			ev.ID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}
