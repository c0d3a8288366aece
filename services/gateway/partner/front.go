package partner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/a2amesh/a2amesh/internal/partnerapi"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
	"github.com/a2amesh/a2amesh/services/gateway/httpbody"
	"github.com/a2amesh/a2amesh/services/gateway/inflight"
)

// The endpoint's front: reading bodies, who is calling, what they reach, and
// which tasks they see.

// readBody takes the turn of a large body (inflight) and reads a JSON body
// within the endpoint's limit, once, into a buffer of its announced length.
func (d *Endpoint) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *endpointError) {
	if err := inflight.Take(w, r, inflight.Anonymous(r)); err != nil {
		return nil, classify(d.cfg.Logger, err, "")
	}
	b, err := httpbody.Read(w, r, d.cfg.MaxBodyBytes)
	switch {
	case errors.Is(err, httpbody.ErrTooLarge):
		return nil, refuse(partnerapi.CodeInvalidRequest, http.StatusRequestEntityTooLarge, "Invalid Request: the body is larger than %d bytes", d.cfg.MaxBodyBytes)
	case err != nil:
		return nil, refuse(partnerapi.CodeInvalidRequest, http.StatusBadRequest, "Invalid Request: the body could not be read")
	}
	if !httpbody.Empty(b) && !httpbody.IsJSON(r.Header.Get("Content-Type")) {
		return nil, refuse(partnerapi.CodeInvalidRequest, http.StatusUnsupportedMediaType, "Invalid Request: Content-Type must be application/json")
	}
	return b, nil
}

// reach returns an agent the caller reaches, and the caller as that agent's
// endpoint sees it, checking the scope the method needs ("" for none). An agent
// the caller does not reach is not found; an anonymous caller is told to
// authenticate instead.
func (d *Endpoint) reach(ctx context.Context, c *admission.Caller, agentID, scope string) (*mesh.Agent, *admission.Caller, error) {
	a, err := d.cfg.A2A.Agent(ctx, agentID)
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, nil, errAgentNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	if !c.Reaches(a) {
		if c.Anonymous() {
			return nil, nil, refuse(partnerapi.CodeAuthenticationFailed, http.StatusUnauthorized, "Authentication failed: this agent needs a credential: send X-API-Key: <api key> or Authorization: Bearer <token>")
		}
		return nil, nil, errAgentNotFound
	}
	cc := c.For(a)
	if scope != "" && !cc.Can(scope) {
		return nil, nil, refuse(partnerapi.CodeAuthenticationFailed, http.StatusForbidden, "Authentication failed: this credential lacks the %s scope", scope)
	}
	return a, cc, nil
}

// visibleTask returns a task the caller may see with the given scope: one
// of an agent it reaches, created by the same caller (the owner sees every
// task). Anything else is not found.
func (d *Endpoint) visibleTask(ctx context.Context, c *admission.Caller, taskID, scope string) (*mesh.TaskRun, *taskRecord, error) {
	if !mesh.ValidID(taskID) {
		return nil, nil, errTaskNotFound
	}
	run, err := d.cfg.Client.GetTaskRun(ctx, taskID)
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, nil, errTaskNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	_, cc, err := d.reach(ctx, c, run.TargetAgentID, scope)
	if errors.Is(err, errAgentNotFound) {
		return nil, nil, errTaskNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	creator, err := d.cfg.A2A.Creator(ctx, run)
	if err != nil {
		return nil, nil, err
	}
	if !cc.Sees(creator) {
		return nil, nil, errTaskNotFound
	}
	rec, err := d.records.task(ctx, run)
	if err != nil {
		return nil, nil, err
	}
	return run, rec, nil
}

// envelope is a JSON-RPC request as seed 003 defines it.
type envelope struct {
	id     any
	method string
	params json.RawMessage
}

// parseEnvelope checks seed 003's envelope rules: a JSON object; jsonrpc
// exactly "2.0"; id a string, a number or null; method a non-empty string;
// params, when present, an object or an array. What is not JSON is -32700,
// JSON that breaks a rule -32600 (with the id, when it could be read).
func parseEnvelope(body []byte) (*envelope, *endpointError) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		if !json.Valid(body) {
			return nil, refuse(partnerapi.CodeParseError, http.StatusBadRequest, "Parse error: the body is not valid JSON")
		}
		return nil, refuse(partnerapi.CodeInvalidRequest, http.StatusBadRequest, "Invalid Request: a JSON-RPC request is an object")
	}
	env := &envelope{}
	if idRaw, ok := raw["id"]; ok {
		var id any
		if err := json.Unmarshal(idRaw, &id); err != nil {
			return nil, refuse(partnerapi.CodeInvalidRequest, http.StatusBadRequest, "Invalid Request: id must be a string, a number or null")
		}
		switch id.(type) {
		case nil, string, float64:
			env.id = id
		default:
			return env, refuse(partnerapi.CodeInvalidRequest, http.StatusBadRequest, "Invalid Request: id must be a string, a number or null")
		}
	}
	var version string
	if json.Unmarshal(raw["jsonrpc"], &version) != nil || version != "2.0" {
		return env, refuse(partnerapi.CodeInvalidRequest, http.StatusBadRequest, `Invalid Request: jsonrpc must be exactly "2.0"`)
	}
	if json.Unmarshal(raw["method"], &env.method) != nil || env.method == "" {
		return env, refuse(partnerapi.CodeInvalidRequest, http.StatusBadRequest, "Invalid Request: method must be a non-empty string")
	}
	if p, ok := raw["params"]; ok {
		if t := bytes.TrimSpace(p); len(t) == 0 || (t[0] != '{' && t[0] != '[') {
			return env, refuse(partnerapi.CodeInvalidRequest, http.StatusBadRequest, "Invalid Request: params must be an object or an array")
		}
		env.params = p
	}
	return env, nil
}
