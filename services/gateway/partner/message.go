package partner

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"

	"github.com/a2amesh/a2amesh/internal/partnerapi"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/services/gateway/admission"
)

// Methods of POST /a2a/message besides the task methods: any other method
// is a task method, run by the agent its params name (params.agentId), and
// its answer is the Task once it ended (or after the blocking wait).
const (
	methodAgentList = "agent.list"
	methodGet       = "tasks/get"
	methodCancel    = "tasks/cancel"
	methodSend      = "message/send"
	methodSendOld   = "tasks/send"
)

// message is POST /a2a/message: JSON-RPC 2.0 by seed 003's envelope rules.
func (d *Endpoint) message(w http.ResponseWriter, r *http.Request) {
	body, de := d.readBody(w, r)
	if de != nil {
		writeRPCError(w, nil, de)
		return
	}
	env, de := parseEnvelope(body)
	if de != nil {
		var id any
		if env != nil {
			id = env.id
		}
		writeRPCError(w, id, de)
		return
	}
	c, err := d.cfg.Admission.Admit(w, r)
	if err != nil {
		writeRPCError(w, env.id, classify(d.cfg.Logger, err, "Internal error"))
		return
	}
	res, err := d.call(r.Context(), c, env)
	if err != nil {
		writeRPCError(w, env.id, classify(d.cfg.Logger, err, "Internal error"))
		return
	}
	writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: env.id, Result: res})
}

// taskParams are the params of tasks/get and tasks/cancel.
type taskParams struct {
	TaskID string `json:"taskId"`
	ID     string `json:"id"`
}

// sendParams are the params the endpoint reads of a task method.
type sendParams struct {
	AgentID       string `json:"agentId"`
	RemoteAgentID string `json:"remoteAgentId"`
	SessionID     string `json:"sessionId"`
	ClientAgentID string `json:"clientAgentId"`
	// Blocking false answers the Task as soon as it exists.
	Blocking *bool `json:"blocking"`
}

// elsewhere are methods of the A2A standard these routes do not offer:
// streaming, resubscription and push configurations are the agents' own
// A2A endpoints' (at /a2a/{agentId}).
var elsewhere = map[string]bool{
	"message/stream": true, "tasks/resubscribe": true, "tasks/pushNotificationConfig/set": true,
	"tasks/pushNotificationConfig/get": true, "tasks/pushNotificationConfig/list": true,
	"tasks/pushNotificationConfig/delete": true, "agent/getAuthenticatedExtendedCard": true,
}

// call runs one method for the caller.
func (d *Endpoint) call(ctx context.Context, c *admission.Caller, env *envelope) (any, error) {
	if elsewhere[env.method] {
		return nil, refuse(partnerapi.CodeCapabilityNotSupported, http.StatusBadRequest,
			"Capability not supported: %s is served by each agent's A2A endpoint at /a2a/{agentId}; use GET /a2a/status for a task's updates", env.method)
	}
	switch env.method {
	case methodAgentList:
		return map[string]any{"agents": d.agentList(ctx, c)}, nil
	case methodGet, methodCancel:
		var p taskParams
		if json.Unmarshal(env.params, &p) != nil || firstOf(p.TaskID, p.ID) == "" {
			return nil, refuse(partnerapi.CodeInvalidParams, http.StatusBadRequest, "Invalid params: params.taskId is required")
		}
		if env.method == methodGet {
			run, rec, err := d.visibleTask(ctx, c, firstOf(p.TaskID, p.ID), meshapi.ScopeRead)
			if err != nil {
				return nil, err
			}
			return taskOf(run, rec), nil
		}
		return d.cancel(ctx, c, firstOf(p.TaskID, p.ID))
	}
	return d.runMethod(ctx, c, env)
}

// cancel cancels a task the caller sees.
func (d *Endpoint) cancel(ctx context.Context, c *admission.Caller, taskID string) (any, error) {
	run, rec, err := d.visibleTask(ctx, c, taskID, meshapi.ScopeCancel)
	if err != nil {
		return nil, err
	}
	if run.Status.Terminal() {
		return nil, stateError(run.Status, "the task is "+string(run.Status))
	}
	run, err = d.cfg.Client.CancelTaskRun(ctx, meshapi.CancelTaskRunRequest{TaskRunID: run.ID, Reason: "canceled by the partner caller"})
	if err != nil {
		return nil, err
	}
	return taskOf(run, rec), nil
}

// runMethod creates the task of a task method and, unless params.blocking
// is false, answers its Task once it ended. A method the platform does not
// know and whose params name no agent is not found. When the agent cannot
// answer while the caller waits (no runtime online, no routing rule), the
// answer is 503 "A2A adapter not available" and no task is created.
func (d *Endpoint) runMethod(ctx context.Context, c *admission.Caller, env *envelope) (any, error) {
	var p sendParams
	_ = json.Unmarshal(env.params, &p)
	agentID := firstOf(p.AgentID, p.RemoteAgentID)
	if agentID == "" {
		if env.method == methodSend || env.method == methodSendOld {
			return nil, refuse(partnerapi.CodeInvalidParams, http.StatusBadRequest, "Invalid params: params.agentId names the agent the message is for")
		}
		return nil, refuse(partnerapi.CodeMethodNotFound, http.StatusBadRequest, "Method not found: %q is no method of the platform; name the agent that runs it in params.agentId", env.method)
	}
	agent, cc, err := d.reach(ctx, c, agentID, meshapi.ScopeSend)
	if err != nil {
		return nil, err
	}
	blocking := p.Blocking == nil || *p.Blocking
	if blocking && !d.runsNow(ctx, agent.ID) {
		return nil, unavailable("agent " + agent.ID + " has no runtime online to answer now; send with params.blocking false (or POST /a2a/task) to queue the task")
	}
	run, rec, err := d.create(ctx, cc, agent, newTask{method: env.method, params: env.params, clientAgentID: firstOf(p.ClientAgentID, c.AgentID), sessionID: p.SessionID})
	if err != nil {
		return nil, err
	}
	if blocking {
		if run, err = d.cfg.Runs.Await(ctx, d.cfg.Client, run, d.cfg.BlockingWait); err != nil {
			return nil, err
		}
	}
	return taskOf(run, rec), nil
}

// listedAgent is one agent of agent.list.
type listedAgent struct {
	AgentID     string       `json:"agentId"`
	Name        string       `json:"name"`
	Description string       `json:"description,omitempty"`
	URL         string       `json:"url"`
	Public      bool         `json:"public"`
	Skills      []mesh.Skill `json:"skills"`
}

// agentList lists the agents the caller reaches, by name.
func (d *Endpoint) agentList(_ context.Context, c *admission.Caller) []listedAgent {
	out := []listedAgent{}
	for _, a := range d.cfg.A2A.Agents() {
		if !c.Reaches(a) {
			continue
		}
		skills := a.Skills
		if skills == nil {
			skills = []mesh.Skill{}
		}
		out = append(out, listedAgent{AgentID: a.ID, Name: a.Name, Description: a.Description, URL: d.cfg.BaseURL + "/a2a/" + a.ID, Public: a.Public, Skills: skills})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].AgentID < out[j].AgentID
	})
	return out
}
