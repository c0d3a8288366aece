// Package adapterclient is the runtime's side of the local HTTP adapter
// contract (seed 000): it posts a task to the adapter, follows progress when
// the adapter streams it, and turns every way the call can go wrong into a
// Failure with a distinct code, so the run is failed with a clear reason.
package adapterclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/mesh"
)

var tracer = tracing.Tracer("adapterclient")

// maxReplyBytes bounds an adapter reply: it may carry artifact contents.
const maxReplyBytes = 64 << 20

// Failure is an adapter call that did not produce a reply.
type Failure struct {
	Code    string
	Message string
	// NotDelivered says the adapter did not take the request: no
	// connection to it could be opened (nothing listens on its port, the
	// address does not resolve), or it refused the task before starting it
	// (429 with its queue full, 503 while it stops). A task that was not
	// delivered was not started, so it is safe to give back to the queue.
	NotDelivered bool
}

func (f *Failure) Error() string { return f.Code + ": " + f.Message }

// Client calls one local adapter.
type Client struct {
	endpoint string
	// fresh opens a new connection per call: a connection kept from an
	// adapter that restarted since would turn a task the new adapter never
	// saw into a lost connection, which cannot be told apart from a task
	// the adapter dropped midway.
	fresh *http.Client
	// kept keeps connections alive between tasks, for an adapter whose
	// /health allows it (keep_alive): one that sends its answer's headers
	// as soon as it takes a task, so a kept connection that breaks before
	// any answer carried no task it took, and the task is sent again.
	kept      *http.Client
	keepAlive atomic.Bool
	// token is the adapter's bearer token, sent with every request when
	// set: an adapter that takes work only from its runtime checks it.
	token atomic.Pointer[string]
}

// keptIdleTimeout closes a kept connection idle this long, well before an
// adapter's own idle timeout would (the shipped adapter's is two minutes,
// Node's default five seconds).
const keptIdleTimeout = 4 * time.Second

// New returns a client for the adapter's run-task endpoint.
func New(endpoint string) (*Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("local agent endpoint %q must be an http URL like %s", endpoint, adapterapi.DefaultEndpoint)
	}
	transport := func(keepAlive bool) *http.Client {
		return &http.Client{Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       keptIdleTimeout,
			ResponseHeaderTimeout: 0, // a task may take minutes before its first byte
			DisableKeepAlives:     !keepAlive,
		}}
	}
	return &Client{endpoint: endpoint, fresh: transport(false), kept: transport(true)}, nil
}

// Endpoint returns the run-task URL.
func (c *Client) Endpoint() string { return c.endpoint }

// SetAuthToken makes every later request carry "Authorization: Bearer
// token"; "" sends none. A runtime that starts the adapter sets the token
// it gave that adapter, before starting it.
func (c *Client) SetAuthToken(token string) { c.token.Store(&token) }

// authorize adds the adapter's token to req.
func (c *Client) authorize(req *http.Request) {
	if t := c.token.Load(); t != nil && *t != "" {
		req.Header.Set("Authorization", "Bearer "+*t)
	}
}

// Run posts a task and returns the classified reply. onProgress receives the
// progress lines of a streaming adapter as they arrive. ctx ending aborts the
// request, which tells the adapter to stop the host process.
func (c *Client) Run(ctx context.Context, req *adapterapi.RunTaskRequest, onProgress func(adapterapi.StreamLine)) (*adapterapi.Reply, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode run-task request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", adapterapi.MediaNDJSON+", application/json")
	c.authorize(hreq)
	// The adapter's span of the task continues the runtime's trace.
	hreq, span := tracing.StartHTTPClient(hreq, tracer, "adapter run-task", tracing.AttrTaskRunID.String(req.TaskRunID))
	defer span.End()
	resp, kept, err := c.post(ctx, hreq)
	if err != nil {
		tracing.Fail(span, mesh.ReasonAdapterConnectionLost)
		return nil, c.transportFailure(ctx, err)
	}
	defer resp.Body.Close()
	span.SetAttributes(tracing.AttrHTTPStatus.Int(resp.StatusCode))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		msg := fmt.Sprintf("local adapter answered HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(snippet)))
		if resp.StatusCode == http.StatusUnauthorized {
			msg += " (give a2a-runtime start the adapter's --auth-token-file with --adapter-token-file)"
		}
		return nil, &Failure{
			Code:    mesh.ReasonAdapterHTTPError,
			Message: msg,
			// 429 (its queue is full) and 503 (it is stopping) refuse the
			// task before it starts.
			NotDelivered: resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable,
		}
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), adapterapi.MediaNDJSON) {
		reply, err := c.readStream(ctx, resp.Body, onProgress)
		if kept && err == nil {
			finish(resp.Body)
		}
		return reply, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	if err != nil {
		return nil, c.transportFailure(ctx, err)
	}
	if len(data) > maxReplyBytes {
		return nil, &Failure{Code: mesh.ReasonAdapterInvalidResponse, Message: fmt.Sprintf("local adapter reply is larger than %d bytes", maxReplyBytes)}
	}
	return parse(data)
}

// post sends a task: over a kept connection when the adapter allows it
// (kept), and again over a fresh one when that connection broke before
// the adapter answered anything (an adapter that allows kept connections
// answers its headers as soon as it takes a task), which carried no task
// the adapter took.
func (c *Client) post(ctx context.Context, hreq *http.Request) (resp *http.Response, kept bool, err error) {
	if !c.keepAlive.Load() {
		resp, err = c.fresh.Do(hreq)
		return resp, false, err
	}
	var answered atomic.Bool
	traced := hreq.WithContext(httptrace.WithClientTrace(hreq.Context(), &httptrace.ClientTrace{
		GotFirstResponseByte: func() { answered.Store(true) },
	}))
	resp, err = c.kept.Do(traced)
	if err == nil || answered.Load() || ctx.Err() != nil {
		return resp, true, err
	}
	// Broken before any answer: the adapter took no task on it, whether
	// the connection was kept (closed as idle, or by a restart) or new (a
	// stopping adapter's port closed before it was accepted).
	// Its other kept connections are likely closing too.
	c.kept.CloseIdleConnections()
	again, gerr := rewound(hreq)
	if gerr != nil {
		return nil, false, err
	}
	resp, err = c.fresh.Do(again)
	return resp, false, err
}

// finishWait bounds how long finish waits for the end of an answer.
const finishWait = 250 * time.Millisecond

// finish reads what is left of a streamed answer after its result line
// (the end of its chunked body), so that its kept connection goes back to
// be used again rather than be closed unread. An adapter that holds the
// answer open after its result is cut off after finishWait.
func finish(body io.ReadCloser) {
	cut := time.AfterFunc(finishWait, func() { _ = body.Close() })
	defer cut.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
}

// rewound is hreq with its body read from the start again.
func rewound(hreq *http.Request) (*http.Request, error) {
	again := hreq.Clone(hreq.Context())
	body, err := hreq.GetBody()
	if err != nil {
		return nil, err
	}
	again.Body = body
	return again, nil
}

// lineBuffer is the size of the buffer a streamed answer is read with; a
// longer line grows it, up to maxReplyBytes.
const lineBuffer = 64 << 10

// lineBuffers are the buffers of the streamed answers being read: one
// allocated for each task cost more than the rest of reading its answer.
var lineBuffers = sync.Pool{New: func() any {
	b := make([]byte, lineBuffer)
	return &b
}}

// readStream reads progress lines and the final result line.
func (c *Client) readStream(ctx context.Context, body io.Reader, onProgress func(adapterapi.StreamLine)) (*adapterapi.Reply, error) {
	sc := bufio.NewScanner(io.LimitReader(body, maxReplyBytes))
	// Nothing read into the buffer outlives the call: a line's fields are
	// copied as they are decoded.
	buf := lineBuffers.Get().(*[]byte)
	defer lineBuffers.Put(buf)
	sc.Buffer(*buf, maxReplyBytes)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var sl adapterapi.StreamLine
		if err := json.Unmarshal(line, &sl); err != nil {
			return nil, &Failure{Code: mesh.ReasonAdapterInvalidJSON, Message: "local adapter sent a stream line that is not JSON"}
		}
		switch sl.Type {
		case adapterapi.LineProgress:
			if onProgress != nil {
				onProgress(sl)
			}
		case adapterapi.LineResult:
			return parse(sl.Result)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, c.transportFailure(ctx, err)
	}
	if ctx.Err() != nil {
		return nil, c.transportFailure(ctx, ctx.Err())
	}
	return nil, &Failure{Code: mesh.ReasonAdapterConnectionLost, Message: "local adapter ended its stream without a result"}
}

func parse(data []byte) (*adapterapi.Reply, error) {
	reply, err := adapterapi.ParseReply(data)
	switch {
	case errors.Is(err, adapterapi.ErrNotJSON):
		return nil, &Failure{Code: mesh.ReasonAdapterInvalidJSON, Message: "local adapter reply is not JSON"}
	case errors.Is(err, adapterapi.ErrNotObject):
		return nil, &Failure{Code: mesh.ReasonAdapterInvalidResponse, Message: "local adapter reply is not a JSON object"}
	case err != nil:
		return nil, &Failure{Code: mesh.ReasonAdapterInvalidResponse, Message: err.Error()}
	}
	return reply, nil
}

// transportFailure names what went wrong with the connection itself.
func (c *Client) transportFailure(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &Failure{Code: mesh.ReasonAdapterTimeout, Message: "local adapter did not answer before the task timeout"}
	case ctx.Err() != nil:
		return &Failure{Code: mesh.ReasonAdapterCanceled, Message: "the adapter request was aborted"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &Failure{Code: mesh.ReasonAdapterUnreachable, Message: fmt.Sprintf("cannot reach the local adapter at %s (connection refused): is a2a-adapter running?", c.endpoint), NotDelivered: true}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &Failure{Code: mesh.ReasonAdapterConnectionLost, Message: "the local adapter closed the connection before answering (did it crash?)"}
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if errors.As(err, &dnsErr) || (errors.As(err, &opErr) && opErr.Op == "dial") {
		return &Failure{Code: mesh.ReasonAdapterUnreachable, Message: fmt.Sprintf("cannot reach the local adapter at %s: %v", c.endpoint, err), NotDelivered: true}
	}
	return &Failure{Code: mesh.ReasonAdapterConnectionLost, Message: fmt.Sprintf("local adapter connection failed: %v", err)}
}

// Health asks the adapter's GET /health (next to the run-task path).
func (c *Client) Health(ctx context.Context) (*adapterapi.Health, error) {
	u, _ := url.Parse(c.endpoint)
	u.Path = strings.TrimSuffix(u.Path, "/run-task") + "/health"
	if !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	u.RawQuery = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	c.authorize(req)
	resp, err := c.fresh.Do(req)
	if err != nil {
		c.keepAlive.Store(false)
		return nil, c.transportFailure(ctx, err)
	}
	defer resp.Body.Close()
	var h adapterapi.Health
	if resp.StatusCode != http.StatusOK {
		// 503: the adapter is stopping and takes no task.
		return nil, &Failure{Code: mesh.ReasonAdapterHTTPError, Message: fmt.Sprintf("GET %s answered HTTP %d", u, resp.StatusCode), NotDelivered: resp.StatusCode == http.StatusServiceUnavailable}
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&h); err != nil {
		c.keepAlive.Store(false)
		return nil, &Failure{Code: mesh.ReasonAdapterInvalidJSON, Message: "health answer is not JSON"}
	}
	c.keepAlive.Store(h.KeepAlive)
	return &h, nil
}

// Reachable asks GET /health and returns nil when the adapter answered it:
// any HTTP answer but 503 counts, so an adapter without /health (or one
// whose host reports trouble) still gets its tasks and reports their
// failures itself. The error is the Failure of a call that got no HTTP
// answer, or the 503 of an adapter that is stopping.
func (c *Client) Reachable(ctx context.Context) error {
	_, err := c.Health(ctx)
	var f *Failure
	if err == nil || (errors.As(err, &f) && (f.Code == mesh.ReasonAdapterHTTPError || f.Code == mesh.ReasonAdapterInvalidJSON) && !f.NotDelivered) {
		return nil
	}
	return err
}
