package delegation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/internal/netguard"
	"github.com/a2amesh/a2amesh/internal/partnerapi"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/tracing"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Partner platforms speak seed 003's routes. A task delegated to one is
// posted to <url>/a2a/task (with the partner's API key, when one was
// given); the partner reports its progress and outcome by calling this
// platform's POST /a2a/webhook, signed with the shared secret, and the
// callback moves the delegating run (seed 003's state machine enforced).
// Canceling the delegating run cancels the partner's task (tasks/cancel on
// <url>/a2a/message).

const (
	minSecretLen   = 16
	maxPartnerName = 200
	maxAPIKeyLen   = 1024
	// maxPartnerReply bounds what is read of a partner's answer.
	maxPartnerReply = 1 << 20
)

func newHTTPClient(allowPrivate bool, timeout time.Duration) *http.Client {
	c := netguard.NewHTTPClient(allowPrivate)
	c.Timeout = timeout
	return c
}

func checkPartnerURL(ctx context.Context, raw string, allowPrivate bool) error {
	_, err := netguard.CheckURL(ctx, raw, allowPrivate)
	return err
}

func (s *Service) handlePartnerCreate(ctx context.Context, in *meshapi.CreatePartnerRequest) (*meshapi.CreatePartnerResponse, error) {
	in.Name, in.URL = strings.TrimSpace(in.Name), strings.TrimRight(strings.TrimSpace(in.URL), "/")
	switch {
	case in.Name == "" || len(in.Name) > maxPartnerName:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "name must be 1 to %d characters", maxPartnerName)
	case in.Secret != "" && len(in.Secret) < minSecretLen:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "secret must be at least %d bytes (or left out to have one generated)", minSecretLen)
	case len(in.Secret) > maxAPIKeyLen || len(in.APIKey) > maxAPIKeyLen:
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "secret and api_key are at most %d bytes", maxAPIKeyLen)
	}
	if err := checkPartnerURL(ctx, in.URL, s.cfg.AllowPrivate); err != nil {
		return nil, err
	}
	if in.Secret == "" {
		in.Secret = secret.NewToken(secret.PrefixPartnerSecret)
	}
	rec := &partnerRecord{
		Partner: meshapi.Partner{
			PartnerID: mesh.NewID(), Name: in.Name, URL: in.URL, SecretHint: "****" + in.Secret[len(in.Secret)-4:],
			HasAPIKey: in.APIKey != "", CreatedAt: time.Now().UTC(),
		},
		Secret: in.Secret, APIKey: in.APIKey,
	}
	if _, err := s.store.partners.Create(ctx, partnerKey(rec.PartnerID), rec); err != nil {
		return nil, err
	}
	return &meshapi.CreatePartnerResponse{Partner: rec.Partner, Secret: rec.Secret}, nil
}

func (s *Service) handlePartnerList(ctx context.Context, _ *meshapi.ListPartnersRequest) (*meshapi.PartnerList, error) {
	ks, err := keys(ctx, s.store.partners.KV(), partnerPrefix)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, err
	}
	out := meshapi.PartnerList{Partners: []meshapi.Partner{}}
	for _, k := range ks {
		p, _, err := s.store.partners.Get(ctx, k)
		if errors.Is(err, mesh.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out.Partners = append(out.Partners, p.Partner)
	}
	// Ids are time-ordered: oldest first.
	slices.SortFunc(out.Partners, func(a, b meshapi.Partner) int { return strings.Compare(a.PartnerID, b.PartnerID) })
	return &out, nil
}

func (s *Service) handlePartnerDelete(ctx context.Context, in *meshapi.DeletePartnerRequest) (*meshapi.Empty, error) {
	if _, err := s.store.partner(ctx, in.PartnerID); err != nil {
		return nil, err
	}
	if err := s.store.partners.Delete(ctx, partnerKey(in.PartnerID), 0); err != nil {
		return nil, err
	}
	return nil, nil
}

// followPartner hands the parent to its partner (unless the partner has it
// already) and follows the parent until it ends: the partner's callbacks
// move it; an end the partner did not cause (canceled, deadline) cancels
// the partner's task.
func (s *Service) followPartner(ctx context.Context, f *follow, parent *mesh.TaskRun) {
	d := parent.DelegatedTo
	if parent.Status == mesh.StatusRunning && d.RemoteTaskID == "" {
		linked, err := s.sendToPartner(ctx, parent)
		if err != nil {
			if ctx.Err() == nil {
				s.failParent(parent, err)
			}
			return
		}
		parent = linked
	} else if parent.Status == mesh.StatusRunning && d.Attempt != parent.Attempt {
		// The partner's question was answered here, but seed 003 has no way
		// to hand the answer on.
		s.failParent(parent, &mesh.RunError{Code: mesh.ReasonDelegationFailed,
			Message: "the partner platform asked for input, and its routes (seed 003) take no further input for a task"})
		return
	}
	w, err := s.runs.FollowRuns(ctx, parent)
	if err != nil {
		return
	}
	defer w.Stop()
	if parent, err = s.client.GetTaskRun(ctx, parent.ID); err != nil {
		return
	}
	for {
		f.held.Store(parent.Status == mesh.StatusRunning)
		if parent.Status == mesh.StatusPending {
			return
		}
		if parent.Status.Terminal() {
			remote := partnerapi.State(parent.DelegatedTo.RemoteState)
			if !remote.Terminal() && parent.DelegatedTo.RemoteTaskID != "" {
				s.cancelAtPartner(ctx, parent)
			}
			return
		}
		run, err := w.NextRun(ctx)
		if err != nil {
			return
		}
		if run.ID == parent.ID && run.Revision >= parent.Revision {
			parent = run
		}
	}
}

// partnerTask is the body of POST <url>/a2a/task.
type partnerTask struct {
	Method        string         `json:"method"`
	Params        map[string]any `json:"params"`
	ClientAgentID string         `json:"clientAgentId"`
	SessionID     string         `json:"sessionId,omitempty"`
}

// sendToPartner posts the parent's task to its partner and links the
// partner's task. The link to the partner's task id is stored first, so
// a callback that arrives at once finds the run.
func (s *Service) sendToPartner(ctx context.Context, parent *mesh.TaskRun) (*mesh.TaskRun, error) {
	d := parent.DelegatedTo
	p, err := s.store.partner(ctx, d.PartnerID)
	if err != nil {
		return nil, &mesh.RunError{Code: mesh.ReasonDelegationFailed, Message: "the partner of the routing rule is no longer registered"}
	}
	params := map[string]any{"text": parent.InputText()}
	var in struct {
		Data any `json:"data"`
	}
	if json.Unmarshal(parent.Input, &in) == nil && in.Data != nil {
		params["data"] = in.Data
	}
	body, _ := json.Marshal(partnerTask{Method: "message/send", Params: params, ClientAgentID: parent.TargetAgentID, SessionID: parent.ConversationID})
	var task partnerapi.Task
	err = s.retry(ctx, func() error { return s.postPartner(ctx, p, d.URL+"/a2a/task", body, &task) })
	if err != nil {
		return nil, &mesh.RunError{Code: mesh.ReasonDelegationFailed, Message: fmt.Sprintf("partner %q did not take the task: %v", p.Name, err),
			Details: map[string]any{"partner_id": p.PartnerID}}
	}
	if task.TaskID == "" || len(task.TaskID) > 256 || !task.State.Valid() {
		return nil, &mesh.RunError{Code: mesh.ReasonDelegationFailed, Message: fmt.Sprintf("partner %q answered without a valid Task", p.Name),
			Details: map[string]any{"partner_id": p.PartnerID}}
	}
	if _, err := s.store.remotes.Put(ctx, remoteKey(p.PartnerID, task.TaskID), &remoteRecord{TaskRunID: parent.ID, CreatedAt: time.Now().UTC()}); err != nil {
		return nil, err
	}
	return s.client.DelegateLink(ctx, meshapi.DelegateLinkRequest{TaskRunID: parent.ID,
		DelegatedTo: mesh.Delegation{RemoteTaskID: task.TaskID, RemoteState: string(task.State)}})
}

// postPartner posts a JSON body to a partner and decodes its JSON answer.
func (s *Service) postPartner(ctx context.Context, p *partnerRecord, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return permanent(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if p.APIKey != "" {
		req.Header.Set("X-API-Key", p.APIKey)
	}
	req, span := tracing.StartHTTPClient(req, tracer, "delegation partner call", tracing.AttrPartnerID.String(p.PartnerID))
	resp, err := s.http.Do(req)
	tracing.EndHTTPClient(span, resp, err)
	if err != nil {
		if errors.Is(err, netguard.ErrPrivateTarget) {
			return permanent(err)
		}
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxPartnerReply))
	switch {
	case resp.StatusCode >= 500:
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return permanent(fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return permanent(fmt.Errorf("the answer is not the JSON expected"))
	}
	return nil
}

// cancelAtPartner cancels the partner's task (JSON-RPC tasks/cancel on its
// /a2a/message), best effort.
func (s *Service) cancelAtPartner(ctx context.Context, parent *mesh.TaskRun) {
	ctx = context.WithoutCancel(ctx)
	d := parent.DelegatedTo
	p, err := s.store.partner(ctx, d.PartnerID)
	if err != nil {
		return
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": parent.ID, "method": "tasks/cancel", "params": map[string]any{"taskId": d.RemoteTaskID}})
	var reply map[string]any
	if err := s.retry(ctx, func() error { return s.postPartner(ctx, p, d.URL+"/a2a/message", body, &reply) }); err != nil {
		s.log.Warn().Ctx(ctx).Err(err).Str("partner_id", p.PartnerID).Str("task_run_id", parent.ID).Msg("partner's task not canceled")
	}
}

// callback is what a partner's callback says: its Task (or the part of it
// that changed).
type callback struct {
	TaskID   string            `json:"taskId"`
	State    partnerapi.State  `json:"state"`
	Result   json.RawMessage   `json:"result"`
	Error    *partnerapi.Error `json:"error"`
	Progress *float64          `json:"progress"`
	Message  string            `json:"message"`
}

func (s *Service) handlePartnerCallback(ctx context.Context, in *meshapi.PartnerCallbackRequest) (*meshapi.Empty, error) {
	p, err := s.store.partner(ctx, in.PartnerID)
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeUnauthorized, "unknown partner")
	}
	if err != nil {
		return nil, err
	}
	if partnerapi.Verify(p.Secret, in.Timestamp, in.Signature, in.Body, s.cfg.CallbackTolerance, time.Now()) != nil {
		return nil, mesh.Errorf(mesh.CodeUnauthorized, "the callback's signature does not match, or its timestamp is too far from now")
	}
	var cb callback
	if err := json.Unmarshal(in.Body, &cb); err != nil || cb.TaskID == "" || !cb.State.Valid() {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "a callback is a Task object with taskId and a valid state")
	}
	if cb.Progress != nil && (*cb.Progress < 0 || *cb.Progress > 100) {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "progress must be between 0 and 100")
	}
	rec, _, err := s.store.remotes.Get(ctx, remoteKey(p.PartnerID, cb.TaskID))
	if errors.Is(err, mesh.ErrNotFound) {
		return nil, mesh.Errorf(mesh.CodeNotFound, "no task delegated to this partner has id %q", cb.TaskID)
	}
	if err != nil {
		return nil, err
	}
	parent, err := s.client.GetTaskRun(ctx, rec.TaskRunID)
	if err != nil {
		return nil, err
	}
	return nil, s.applyCallback(ctx, p, parent, &cb)
}

// applyCallback moves the delegating run as the partner's Task moved,
// refusing what seed 003's state machine does not allow.
func (s *Service) applyCallback(ctx context.Context, p *partnerRecord, parent *mesh.TaskRun, cb *callback) error {
	from := partnerapi.StateOf(parent.Status)
	if parent.Status == mesh.StatusRunning && parent.DelegatedTo.RemoteState != "" {
		from = partnerapi.State(parent.DelegatedTo.RemoteState)
	}
	if from != cb.State && !partnerapi.CanTransition(from, cb.State) {
		e := mesh.Errorf(mesh.CodeInvalidTransition, "invalid task state: the task is %s and cannot become %s", from, cb.State)
		e.Status = parent.Status
		return e
	}
	if from == cb.State && cb.State != partnerapi.StateWorking {
		return nil // a repeated callback
	}
	if parent.Status != mesh.StatusRunning {
		e := mesh.Errorf(mesh.CodeInvalidTransition, "invalid task state: the delegating task is %s", parent.Status)
		e.Status = parent.Status
		return e
	}
	var err error
	switch cb.State {
	case partnerapi.StateWorking:
		_, err = s.client.DelegateProgress(ctx, meshapi.DelegateProgressRequest{TaskRunID: parent.ID, Message: cb.Message, Percent: cb.Progress, RemoteState: string(cb.State)})
	case partnerapi.StateCompleted:
		_, err = s.client.DelegateEnd(ctx, meshapi.DelegateEndRequest{TaskRunID: parent.ID, Status: mesh.StatusCompleted, Output: resultOutput(cb.Result), RemoteState: string(cb.State)})
	case partnerapi.StateInputRequired:
		out, _ := json.Marshal(map[string]any{"text": cb.Message})
		_, err = s.client.DelegateEnd(ctx, meshapi.DelegateEndRequest{TaskRunID: parent.ID, Status: mesh.StatusInputRequired, Output: out, RemoteState: string(cb.State)})
	case partnerapi.StateFailed:
		msg, code := "the partner's task failed", 0
		if cb.Error != nil {
			msg, code = cb.Error.Message, cb.Error.Code
		}
		_, err = s.client.DelegateEnd(ctx, meshapi.DelegateEndRequest{TaskRunID: parent.ID, Status: mesh.StatusFailed, RemoteState: string(cb.State), Error: &mesh.RunError{
			Code: mesh.ReasonPartnerTaskFailed, Message: fmt.Sprintf("delegated to partner %q, whose task failed: %s", p.Name, msg),
			Details: map[string]any{"partner_id": p.PartnerID, "remote_task_id": cb.TaskID, "partner_error_code": code},
		}})
	case partnerapi.StateCanceled:
		_, err = s.client.DelegateEnd(ctx, meshapi.DelegateEndRequest{TaskRunID: parent.ID, Status: mesh.StatusCanceled, RemoteState: string(cb.State), Error: &mesh.RunError{
			Code: mesh.ReasonCanceled, Message: fmt.Sprintf("partner %q canceled the delegated task", p.Name),
			Details: map[string]any{"partner_id": p.PartnerID, "remote_task_id": cb.TaskID},
		}})
	}
	return err
}

// resultOutput is a run's output made of a partner Task's result: its text
// (the result itself when it is a string, or its "text") and the whole
// result as data.
func resultOutput(result json.RawMessage) json.RawMessage {
	out := map[string]any{}
	var text string
	var obj struct {
		Text string `json:"text"`
	}
	switch {
	case json.Unmarshal(result, &text) == nil:
		out["text"] = text
	case json.Unmarshal(result, &obj) == nil && obj.Text != "":
		out["text"] = obj.Text
		out["data"] = result
	case len(result) > 0 && string(result) != "null":
		out["data"] = result
	}
	b, _ := json.Marshal(out)
	return b
}
