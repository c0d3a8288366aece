package apiclient

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
// returns an error.
func (c *Client) StreamEvents(ctx context.Context, path string, query url.Values, fn func(Event) error) error {
	lastID := ""
	backoff := 250 * time.Millisecond
	for {
		err := c.streamOnce(ctx, path, query, &lastID, fn)
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
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

func (c *Client) streamOnce(ctx context.Context, path string, query url.Values, lastID *string, fn func(Event) error) error {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", c.agent)
	if *lastID != "" {
		req.Header.Set("Last-Event-ID", *lastID)
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
	return readSSE(resp.Body, func(ev Event) error {
		if ev.ID != "" {
			*lastID = ev.ID
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
