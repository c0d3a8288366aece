package a2aserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
	"github.com/a2amesh/a2amesh/services/gateway/httpbody"
	"github.com/a2amesh/a2amesh/services/gateway/inflight"
)

// The endpoint's front: what happens to a request before the SDK's transport
// decodes it. It finds the agent, reads the protocol version, authenticates
// the caller (from the headers, before any of the body is read), bounds and
// checks the body, checks the scope of the method and the rate limit, and answers every refusal in the shape of the
// request's binding and version. The SDK's handlers then see only requests
// that may proceed, with the agent, caller and version in the context.

// negotiate reads the protocol version a request asks for: the A2A-Version
// header, or the A2A-Version query parameter (spec 1.0 §3.6.1), major.minor
// only. An empty version is 0.3 (§3.6.2). ok is false for versions this
// platform does not serve.
func negotiate(r *http.Request) (version string, ok bool) {
	v := strings.TrimSpace(r.Header.Get("A2A-Version"))
	if v == "" {
		v = strings.TrimSpace(r.URL.Query().Get("A2A-Version"))
	}
	if v == "" {
		return a2atask.Version03, true
	}
	major, rest, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	minor, _, _ := strings.Cut(rest, ".")
	switch major + "." + minor {
	case "1.0":
		return a2atask.Version10, true
	case "0.3":
		return a2atask.Version03, true
	}
	return v, false
}

// jsonMedia reports whether a Content-Type is JSON (application/json,
// application/a2a+json, ...).
// callerBody takes the turn of a large body (inflight) and reads the body
// within the caller's limit.
func (s *Server) callerBody(w http.ResponseWriter, r *http.Request, c *admission.Caller) ([]byte, error) {
	if err := inflight.Take(w, r, c.Anonymous()); err != nil {
		return nil, err
	}
	return readBody(w, r, s.bodyLimit(c))
}

// readBody reads a whole body within limit, once, into a buffer of its
// announced length; a longer one is errPayloadTooLarge.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	b, err := httpbody.Read(w, r, limit)
	switch {
	case errors.Is(err, httpbody.ErrTooLarge):
		return nil, fmt.Errorf("%w: the request body is larger than %d bytes", errPayloadTooLarge, limit)
	case err != nil:
		return nil, a2a.NewError(a2a.ErrInvalidRequest, "the request body could not be read")
	}
	return b, nil
}

// bodyLimit is how much of a body the endpoint reads for a caller: anonymous
// callers (of a public agent) get the platform's cap for every route, callers
// with a credential the endpoint's larger one, which leaves room for inline
// files.
func (s *Server) bodyLimit(c *admission.Caller) int64 {
	if c.Anonymous() {
		return s.cfg.MaxAnonymousBodyBytes
	}
	return s.cfg.MaxBodyBytes
}

// envelope is a JSON-RPC request as the front reads it.
type envelope struct {
	id     any
	method string
	params json.RawMessage
}

// inPlace is a JSON value of the body, not copied out of it: params may be
// megabytes, which the front only looks at. The body outlives the
// envelope and is never written to, so keeping the slice encoding/json
// hands UnmarshalJSON is safe.
type inPlace []byte

func (v *inPlace) UnmarshalJSON(b []byte) error {
	*v = b
	return nil
}

// parseEnvelope checks the JSON-RPC 2.0 envelope: -32700 for what is not
// JSON, -32600 for JSON that is not a request object.
func parseEnvelope(body []byte) (*envelope, error) {
	var raw map[string]inPlace
	if err := json.Unmarshal(body, &raw); err != nil {
		if !json.Valid(body) {
			return nil, a2a.NewError(a2a.ErrParseError, "the body is not valid JSON")
		}
		return nil, a2a.NewError(a2a.ErrInvalidRequest, "a JSON-RPC request must be an object")
	}
	env := &envelope{params: json.RawMessage(raw["params"])}
	if idRaw, ok := raw["id"]; ok {
		if err := json.Unmarshal(idRaw, &env.id); err != nil {
			return nil, a2a.NewError(a2a.ErrInvalidRequest, "id must be a string, a number or null")
		}
		switch env.id.(type) {
		case nil, string, float64:
		default:
			env.id = nil
			return env, a2a.NewError(a2a.ErrInvalidRequest, "id must be a string, a number or null")
		}
	}
	var version string
	if json.Unmarshal(raw["jsonrpc"], &version) != nil || version != "2.0" {
		return env, a2a.NewError(a2a.ErrInvalidRequest, `jsonrpc must be "2.0"`)
	}
	if json.Unmarshal(raw["method"], &env.method) != nil || env.method == "" {
		return env, a2a.NewError(a2a.ErrInvalidRequest, "method must be a non-empty string")
	}
	return env, nil
}

// serveJSONRPC is the JSON-RPC endpoint, POST /a2a/{agentId}[/]: one URL
// for both versions, told apart by A2A-Version.
func (s *Server) serveJSONRPC(w http.ResponseWriter, r *http.Request) {
	agent, err := s.agent(r.Context(), r.PathValue("agentId"))
	if err != nil {
		s.cfg.WriteError(w, r, err)
		return
	}
	version, supported := negotiate(r)
	shape := version
	if !supported {
		shape = a2atask.Version10
	}
	// Who calls is known before any of the body is read: a caller without
	// a credential never makes the endpoint read megabytes.
	c, err := s.authenticate(w, r, agent)
	if err != nil {
		writeRPCError(w, shape, requestID(r), err, nil)
		return
	}
	body, err := s.callerBody(w, r, c)
	if err != nil {
		writeRPCError(w, shape, nil, err, retryMeta(w))
		return
	}
	if !httpbody.IsJSON(r.Header.Get("Content-Type")) {
		writeRPCError(w, shape, nil, a2a.NewError(a2a.ErrUnsupportedContentType, "Content-Type must be application/json"), nil)
		return
	}
	env, err := parseEnvelope(body)
	if err != nil {
		var id any
		if env != nil {
			id = env.id
		}
		writeRPCError(w, shape, id, err, nil)
		return
	}
	if !supported {
		writeRPCError(w, shape, env.id, a2a.NewError(a2a.ErrVersionNotSupported, fmt.Sprintf("A2A-Version %q is not supported; this agent speaks 1.0 and 0.3", version)), nil)
		return
	}
	method, known := rpcMethods[version][env.method]
	if !known {
		writeRPCError(w, version, env.id, a2a.NewError(a2a.ErrMethodNotFound, fmt.Sprintf("method %q is not an A2A %s method", env.method, version)), nil)
		return
	}
	if body, err = withParams(body, env, method); err != nil {
		writeRPCError(w, version, env.id, err, nil)
		return
	}
	if err := s.authorize(w, agent, c, method); err != nil {
		writeRPCError(w, version, env.id, err, retryMeta(w))
		return
	}
	if version == a2atask.Version03 && method == methodExtendedCard {
		s.serveExtendedCard03(w, r, agent, env.id)
		return
	}
	req := r.WithContext(withRequest(r.Context(), &request{agent: agent, caller: c, version: version}))
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	ww := newWireWriter(w, version == a2atask.Version03, false)
	s.jsonrpc[version].ServeHTTP(ww, req)
	ww.finish()
}

// withParams makes sure a request has params: every method takes an object
// (the SDK would read missing params as a parse error). Only the extended
// card has nothing to ask for; an empty object stands in.
func withParams(body []byte, env *envelope, method string) ([]byte, error) {
	if len(env.params) > 0 && string(env.params) != "null" {
		if env.params[0] != '{' {
			return nil, a2a.NewError(a2a.ErrInvalidParams, "params must be an object")
		}
		return body, nil
	}
	if method != methodExtendedCard {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "params are required")
	}
	return json.Marshal(map[string]any{"jsonrpc": "2.0", "id": env.id, "method": env.method, "params": map[string]any{}})
}

// serveREST serves the HTTP+JSON routes of one version: 1.0 below the
// agent, 0.3 below its /v1. The path says the version; A2A-Version must
// agree with it (an empty one means 0.3, spec 1.0 §3.6.2).
func (s *Server) serveREST(w http.ResponseWriter, r *http.Request, version string) {
	agent, err := s.agent(r.Context(), r.PathValue("agentId"))
	if err != nil {
		s.cfg.WriteError(w, r, err)
		return
	}
	if asked, ok := negotiate(r); !ok || asked != version {
		writeRESTError(w, a2a.NewError(a2a.ErrVersionNotSupported, fmt.Sprintf("A2A-Version %q is not served here: HTTP+JSON 1.0 is at %s/ with A2A-Version: 1.0, 0.3 at %s/v1/", asked, agent.ID, agent.ID)), nil)
		return
	}
	rel := strings.TrimPrefix(r.URL.Path, "/a2a/"+agent.ID)
	method := restMethod(r.Method, strings.TrimPrefix(rel, "/v1"))
	c, err := s.authenticate(w, r, agent)
	if err != nil {
		writeRESTError(w, err, nil)
		return
	}
	var body []byte
	if r.Method == http.MethodPost {
		if body, err = s.callerBody(w, r, c); err != nil {
			writeRESTError(w, err, retryMeta(w))
			return
		}
		if len(bytes.TrimSpace(body)) > 0 && !httpbody.IsJSON(r.Header.Get("Content-Type")) {
			writeRESTError(w, a2a.NewError(a2a.ErrUnsupportedContentType, "Content-Type must be application/json"), nil)
			return
		}
	}
	if version == a2atask.Version03 && method == methodPushCreate {
		body = fixPushCreate03(body, pathTaskID(rel))
	}
	if err := s.authorize(w, agent, c, method); err != nil {
		writeRESTError(w, err, retryMeta(w))
		return
	}
	if version == a2atask.Version03 && method == methodExtendedCard {
		s.serveExtendedCard03(w, r, agent, nil)
		return
	}
	req := r.WithContext(withRequest(r.Context(), &request{agent: agent, caller: c, version: version}))
	u := *r.URL
	u.Path, u.RawPath = rel, ""
	req.URL = &u
	if body != nil {
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	ww := newWireWriter(w, false, true)
	s.rest[version].ServeHTTP(ww, req)
	ww.finish()
}

// admit authenticates the caller and checks the method's scope and the
// caller's rate limit. A refusal sets what the answer needs in w's headers
// (WWW-Authenticate, Retry-After).
func (s *Server) admit(w http.ResponseWriter, r *http.Request, agent *mesh.Agent, method string) (*admission.Caller, error) {
	c, err := s.authenticate(w, r, agent)
	if err != nil {
		return nil, err
	}
	if err := s.authorize(w, agent, c, method); err != nil {
		return nil, err
	}
	return c, nil
}

// authenticate returns the caller of r, from its headers only. A refusal
// sets WWW-Authenticate.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, agent *mesh.Agent) (*admission.Caller, error) {
	c, err := s.admission.Authenticate(w, r, agent)
	if err != nil {
		return nil, toA2A(s.log, err)
	}
	return c, nil
}

// authorize checks the method's scope and takes one request from the
// caller's rate limit (setting Retry-After when refused). A caller without
// a credential (of a public agent) is told to authenticate for what only a
// credential gives: the extended card (spec 1.0 §13.3), canceling and push
// configurations.
func (s *Server) authorize(w http.ResponseWriter, agent *mesh.Agent, c *admission.Caller, method string) error {
	scope := scopes[method]
	switch {
	case c.Anonymous() && (credentialOnly[method] || (scope != "" && !c.Can(scope))):
		admission.Challenge(w)
		return a2a.NewError(a2a.ErrUnauthenticated, fmt.Sprintf("%s needs a credential, on a public agent too: send X-API-Key: <api key> or Authorization: Bearer <token>", method))
	case scope != "" && !c.Can(scope):
		return a2a.NewError(a2a.ErrUnauthorized, fmt.Sprintf("this credential lacks the %s scope that %s needs", scope, method))
	}
	return s.admission.AllowAgent(w, agent.ID, c)
}

// idScanBytes bounds what the endpoint reads of a body it refuses before
// reading it (no valid credential), looking for the request's id.
const idScanBytes = 4 << 10

// requestID is the id of a JSON-RPC request whose body the endpoint did not
// read, from the body's first idScanBytes: a client matches the refusal to
// its request by it (JSON-RPC 2.0 §5: the id is null only when it could not
// be read). Nil when it is not there, or not a string or a number.
func requestID(r *http.Request) any {
	dec := json.NewDecoder(io.LimitReader(r.Body, idScanBytes))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil
		}
		if key != "id" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		var id any
		if dec.Decode(&id) != nil {
			return nil
		}
		switch id.(type) {
		case string, float64:
			return id
		}
		return nil
	}
	return nil
}

// retryMeta puts the Retry-After of a refusal into the error's details.
func retryMeta(w http.ResponseWriter) map[string]string {
	ra := w.Header().Get("Retry-After")
	if ra == "" {
		return nil
	}
	if _, err := strconv.Atoi(ra); err != nil {
		return nil
	}
	return map[string]string{"retryAfterSeconds": ra}
}

// streamDeadline bounds how long the endpoint keeps an event stream open for
// one task when the task never ends (it has its own deadline otherwise).
const streamDeadline = 24 * time.Hour
