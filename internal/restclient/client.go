// Package restclient is a small client for the platform's REST API, used by
// the admin commands and by the runtime's HTTP transport. Error answers come
// back as *mesh.Error with the API's code and message; HTTPError keeps the status.
package restclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Client calls one platform.
type Client struct {
	base  *url.URL
	http  *http.Client
	auth  func(h http.Header)
	agent string
}

// Option configures a Client.
type Option func(*Client)

// WithOwnerToken authenticates as the owner (Authorization: Bearer).
func WithOwnerToken(token string) Option {
	return func(c *Client) { c.auth = func(h http.Header) { h.Set("Authorization", "Bearer "+token) } }
}

// WithRuntimeToken authenticates as a runtime (X-Runtime-Token, seed 001).
func WithRuntimeToken(token string) Option {
	return func(c *Client) { c.auth = func(h http.Header) { h.Set("X-Runtime-Token", token) } }
}

// WithHTTPClient replaces the default HTTP client.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.agent = ua } }

// DefaultBase is the API base clients use unless told another: where a
// platform on this machine listens by default.
const DefaultBase = "http://" + mesh.DefaultAPIAddr

// New returns a client for the API at base (e.g. DefaultBase).
func New(base string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("api base %q must be an http(s) URL like http://127.0.0.1:3000", base)
	}
	c := &Client{base: u, http: &http.Client{Timeout: 0}, auth: func(http.Header) {}, agent: "a2a-mesh"}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Base returns the API base URL.
func (c *Client) Base() string { return c.base.String() }

// HTTPError is an error answer of the API.
type HTTPError struct {
	Status int
	Err    *mesh.Error
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Err.Message, e.Status)
}

// Unwrap makes errors.Is(err, mesh.ErrNotFound) and friends work.
func (e *HTTPError) Unwrap() error { return e.Err }

// StatusOf returns the HTTP status of an API error, or 0.
func StatusOf(err error) int {
	var h *HTTPError
	if errors.As(err, &h) {
		return h.Status
	}
	return 0
}

// Do sends a JSON request and decodes a JSON answer into out (when not nil).
// It returns the HTTP status; 204 leaves out untouched.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, in, out any) (int, error) {
	status, _, err := c.Exchange(ctx, method, path, query, in, out)
	return status, err
}

// Call sends op, an operation of the table, to its REST route: the path
// values and query from req's fields, req as the body (none for GET and
// DELETE); its answer is decoded into resp. It makes the client a
// meshapi.Sender, so meshapi.Send speaks the REST API as it speaks the bus.
func (c *Client) Call(ctx context.Context, op *meshapi.OpInfo, req, resp any) error {
	var body any
	if op.REST != nil && op.REST.Method != http.MethodGet && op.REST.Method != http.MethodDelete {
		body = req
	}
	_, err := c.Route(ctx, op, req, body, resp)
	return err
}

// Route sends body to op's REST route, its path values and query taken
// from the fields of at, and decodes the answer into out (when not nil). It
// is Call for a route whose body is not the operation's request (a Custom
// row: a person's answer, a decision), and for a caller that wants the
// answer's status.
func (c *Client) Route(ctx context.Context, op *meshapi.OpInfo, at, body, out any) (int, error) {
	if op.REST == nil {
		return 0, mesh.Errorf(mesh.CodeInvalidRequest, "%s is not an operation of the REST API", op.Name)
	}
	target, err := op.REST.PathOf(at)
	if err != nil {
		return 0, mesh.Errorf(mesh.CodeInvalidRequest, "%v", err)
	}
	path, rawQuery, _ := strings.Cut(target, "?")
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return 0, mesh.Errorf(mesh.CodeInvalidRequest, "%v", err)
	}
	return c.Do(ctx, op.REST.Method, path, query, body, out)
}

// Exchange is Do that also returns the answer's headers.
func (c *Client) Exchange(ctx context.Context, method, path string, query url.Values, in, out any) (int, http.Header, error) {
	resp, err := c.Send(ctx, method, path, query, in)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent || out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.StatusCode, resp.Header, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return resp.StatusCode, resp.Header, nil
}

// Send sends a request and returns the response when it is 2xx; error answers
// become *HTTPError. The caller closes the body.
func (c *Client) Send(ctx context.Context, method, path string, query url.Values, in any) (*http.Response, error) {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawQuery = query.Encode()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.agent)
	// A request made within a trace (a runtime's report on a task) carries it.
	tracing.Inject(ctx, req.Header)
	c.auth(req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u.Redacted(), err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, decodeError(resp)
}

// NotSent reports whether a request failed with err before it reached
// the server: no connection to it could be made. A request whose
// connection failed later may have been handled.
func NotSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error mesh.Error `json:"error"`
	}
	if json.Unmarshal(b, &body) != nil || body.Error.Code == "" {
		body.Error = mesh.Error{Code: mesh.CodeInternal, Message: fmt.Sprintf("unexpected answer: %s", strings.TrimSpace(string(b)))}
		if len(b) == 0 {
			body.Error.Message = http.StatusText(resp.StatusCode)
		}
	}
	return &HTTPError{Status: resp.StatusCode, Err: &body.Error}
}

// DefaultTimeout is a sensible bound for one non-streaming call.
const DefaultTimeout = 30 * time.Second
