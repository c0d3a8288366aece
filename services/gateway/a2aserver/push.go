package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Push notifications are deliveries of the webhooks service: each push
// configuration of a task is a webhook subscription to its run's events, in
// the A2A format of the protocol version it was set with, so retries with
// backoff, the retry window, dead letters (announced as
// webhook.delivery_failed), the SSRF checks and restart safety are the
// webhooks service's. The configuration itself (its id, token and
// authentication, as the client gave them) is kept in the task's A2A record.

// maxPushConfigs bounds the configurations of one task.
const maxPushConfigs = 10

var errNoPush = a2a.NewError(a2a.ErrPushNotificationNotSupported, "push notifications are turned off on this platform")

// CreateTaskPushConfig implements a2asrv.RequestHandler.
func (h *handler) CreateTaskPushConfig(ctx context.Context, cfg *a2a.PushConfig) (*a2a.PushConfig, error) {
	if h.s.cfg.NoPush {
		return nil, errNoPush
	}
	_, run, err := h.store.get(ctx, string(cfg.TaskID))
	if err != nil {
		return nil, err
	}
	return h.createPush(ctx, run, cfg, nil)
}

// GetTaskPushConfig implements a2asrv.RequestHandler.
func (h *handler) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	configs, err := h.pushConfigs(ctx, req.TaskID)
	if err != nil {
		return nil, err
	}
	if req.ID == "" && requestOf(ctx).version == a2atask.Version03 {
		return onlyConfig(configs)
	}
	for _, c := range configs {
		if c.ID == req.ID {
			return c, nil
		}
	}
	return nil, a2a.NewError(a2a.ErrTaskNotFound, "the task has no push notification configuration "+req.ID)
}

// onlyConfig answers a 0.3 get without pushNotificationConfigId, which 0.3
// makes optional (and 0.2 clients, whose tasks had one configuration, never
// send): the task's configuration, when it has exactly one.
func onlyConfig(configs []*a2a.PushConfig) (*a2a.PushConfig, error) {
	switch len(configs) {
	case 0:
		return nil, a2a.NewError(a2a.ErrTaskNotFound, "the task has no push notification configuration")
	case 1:
		return configs[0], nil
	}
	return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("the task has %d push notification configurations: name one with pushNotificationConfigId", len(configs)))
}

// ListTaskPushConfigs implements a2asrv.RequestHandler.
func (h *handler) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	configs, err := h.pushConfigs(ctx, req.TaskID)
	if err != nil {
		return nil, err
	}
	return &a2a.ListTaskPushConfigResponse{Configs: configs}, nil
}

// DeleteTaskPushConfig implements a2asrv.RequestHandler: nothing more is
// pushed to that configuration. Deleting one that does not exist (or no
// longer does) succeeds; a task the caller cannot see is still not found.
func (h *handler) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) error {
	if h.s.cfg.NoPush {
		return errNoPush
	}
	if _, _, err := h.store.get(ctx, string(req.TaskID)); err != nil {
		return err
	}
	var removed *pushConfig
	_, err := h.s.records.modify(ctx, requestOf(ctx).agent.ID, string(req.TaskID), func(rec *record) error {
		i := slices.IndexFunc(rec.Push, func(p pushConfig) bool { return p.ID == req.ID })
		if i < 0 {
			return errPushNotFound
		}
		p := rec.Push[i]
		removed = &p
		rec.Push = slices.Delete(rec.Push, i, i+1)
		return nil
	})
	if errors.Is(err, errPushNotFound) || errors.Is(err, mesh.ErrNotFound) {
		// Deleting is idempotent (1.0 §3.1.10): a configuration already gone
		// is what the caller asked for.
		return nil
	}
	if err != nil {
		return toA2A(h.s.log, err)
	}
	if err := h.s.client.DeleteWebhook(ctx, removed.WebhookID); err != nil && !errors.Is(err, mesh.ErrNotFound) {
		return toA2A(h.s.log, err)
	}
	return nil
}

var errPushNotFound = errors.New("push configuration not found")

// pushConfigs lists a visible task's configurations.
func (h *handler) pushConfigs(ctx context.Context, taskID a2a.TaskID) ([]*a2a.PushConfig, error) {
	if h.s.cfg.NoPush {
		return nil, errNoPush
	}
	if _, _, err := h.store.get(ctx, string(taskID)); err != nil {
		return nil, err
	}
	rec, _, err := h.s.records.get(ctx, requestOf(ctx).agent.ID, string(taskID))
	if err != nil {
		return nil, toA2A(h.s.log, err)
	}
	out := []*a2a.PushConfig{}
	if rec == nil {
		return out, nil
	}
	for _, p := range rec.Push {
		out = append(out, p.a2a(taskID))
	}
	return out, nil
}

// pushFromSend sets the push configuration a message came with, for its
// task, from the task's start: the webhook replays the run's events since
// its creation, so not even the first state change is missed.
func (h *handler) pushFromSend(ctx context.Context, req *a2a.SendMessageRequest, taskID a2a.TaskID) error {
	if req.Config == nil || req.Config.PushConfig == nil {
		return nil
	}
	if h.s.cfg.NoPush {
		return errNoPush
	}
	_, run, err := h.store.get(ctx, string(taskID))
	if err != nil {
		return err
	}
	since := run.CreatedAt.Add(-time.Second)
	cfg := *req.Config.PushConfig
	cfg.TaskID = taskID
	_, err = h.createPush(ctx, run, &cfg, &since)
	return err
}

// createPush makes the webhook of a configuration and records it; a
// configuration with the id of an existing one replaces it.
func (h *handler) createPush(ctx context.Context, run *mesh.TaskRun, cfg *a2a.PushConfig, since *time.Time) (*a2a.PushConfig, error) {
	rq := requestOf(ctx)
	if cfg.URL == "" {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "url is required")
	}
	if cfg.ID == "" {
		cfg.ID = mesh.NewID()
	}
	if len(cfg.ID) > 128 {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "the configuration id is longer than 128 characters")
	}
	format := meshapi.WebhookFormatA2A
	if rq.version == a2atask.Version03 {
		format = meshapi.WebhookFormatA2AV03
	}
	in := meshapi.CreateWebhookRequest{
		URL: cfg.URL, AgentID: run.TargetAgentID, TaskRunID: run.ID, Format: format, Token: cfg.Token, Since: since,
	}
	if cfg.Auth != nil && cfg.Auth.Credentials != "" {
		in.AuthScheme, in.AuthCredentials = cfg.Auth.Scheme, cfg.Auth.Credentials
		if in.AuthScheme == "" {
			in.AuthScheme = "Bearer"
		}
	}
	wh, err := h.s.client.CreateWebhook(ctx, in)
	if err != nil {
		if errors.Is(err, mesh.ErrTargetNotAllowed) || errors.Is(err, mesh.ErrInvalidRequest) {
			return nil, a2a.NewError(a2a.ErrInvalidParams, mesh.AsError(err).Message)
		}
		return nil, toA2A(h.s.log, err)
	}
	p := pushConfig{
		ID: cfg.ID, WebhookID: wh.WebhookID, URL: wh.URL, Token: cfg.Token, AuthScheme: in.AuthScheme,
		AuthCredentials: in.AuthCredentials, Version: rq.version,
	}
	var replaced string
	_, err = h.s.records.modify(ctx, run.TargetAgentID, run.ID, func(rec *record) error {
		replaced = ""
		i := slices.IndexFunc(rec.Push, func(q pushConfig) bool { return q.ID == p.ID })
		if i >= 0 {
			replaced = rec.Push[i].WebhookID
			rec.Push[i] = p
			return nil
		}
		if len(rec.Push) >= maxPushConfigs {
			return fmt.Errorf("%w", errTooManyPush)
		}
		rec.Push = append(rec.Push, p)
		return nil
	})
	if err != nil {
		_ = h.s.client.DeleteWebhook(context.WithoutCancel(ctx), wh.WebhookID)
		if errors.Is(err, errTooManyPush) {
			return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("a task has at most %d push notification configurations", maxPushConfigs))
		}
		if errors.Is(err, mesh.ErrNotFound) {
			return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "push notifications are for tasks sent through the A2A endpoint")
		}
		return nil, toA2A(h.s.log, err)
	}
	if replaced != "" {
		_ = h.s.client.DeleteWebhook(context.WithoutCancel(ctx), replaced)
	}
	return p.a2a(a2a.TaskID(run.ID)), nil
}

var errTooManyPush = errors.New("too many push configurations")

// a2a is the configuration as A2A shows it.
func (p *pushConfig) a2a(taskID a2a.TaskID) *a2a.PushConfig {
	out := &a2a.PushConfig{TaskID: taskID, ID: p.ID, URL: p.URL, Token: p.Token}
	if p.AuthScheme != "" {
		out.Auth = &a2a.PushAuthInfo{Scheme: p.AuthScheme, Credentials: p.AuthCredentials}
	}
	return out
}
