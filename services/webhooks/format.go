package webhooks

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Headers of A2A push notifications.
const (
	// HeaderA2AToken carries the notification token of a push configuration
	// (A2A 0.3, and 1.0 when a token is set), so the receiver can tell the
	// notification is for a task it asked about.
	HeaderA2AToken = "X-A2A-Notification-Token"
)

// maxPushToken bounds tokens and credentials a push configuration carries.
const maxPushToken = 1024

// validateFormat checks the delivery format of a subscription being created
// and copies its A2A authentication. A2A push notifications are about one
// task: they need its agent and task run.
func validateFormat(sub *subscription, in *meshapi.CreateWebhookRequest) error {
	switch in.Format {
	case "", meshapi.WebhookFormatCloudEvents:
		if in.Token != "" || in.AuthScheme != "" || in.AuthCredentials != "" {
			return mesh.Errorf(mesh.CodeInvalidRequest, "token and auth_* are for the A2A formats")
		}
		return nil
	case meshapi.WebhookFormatA2A, meshapi.WebhookFormatA2AV03:
	default:
		return mesh.Errorf(mesh.CodeInvalidRequest, "format must be %s, %s or %s", meshapi.WebhookFormatCloudEvents, meshapi.WebhookFormatA2A, meshapi.WebhookFormatA2AV03)
	}
	if in.AgentID == "" || in.TaskRunID == "" {
		return mesh.Errorf(mesh.CodeInvalidRequest, "the A2A formats push one task's states: agent_id and task_run_id are required")
	}
	if len(in.Types) > 0 {
		return mesh.Errorf(mesh.CodeInvalidRequest, "the A2A formats push every state change of the task; types cannot narrow them")
	}
	for name, v := range map[string]string{"token": in.Token, "auth_scheme": in.AuthScheme, "auth_credentials": in.AuthCredentials} {
		// A value ends up in a header: a line break would smuggle another.
		if len(v) > maxPushToken || strings.ContainsAny(v, "\r\n\x00") {
			return mesh.Errorf(mesh.CodeInvalidRequest, "%s must be at most %d bytes without line breaks", name, maxPushToken)
		}
	}
	if in.AuthScheme != "" && strings.ContainsAny(in.AuthScheme, " \t") {
		return mesh.Errorf(mesh.CodeInvalidRequest, "auth_scheme must be one word, like Bearer")
	}
	if (in.AuthScheme == "") != (in.AuthCredentials == "") {
		return mesh.Errorf(mesh.CodeInvalidRequest, "auth_scheme and auth_credentials go together")
	}
	sub.Format, sub.Token = in.Format, in.Token
	sub.AuthScheme, sub.AuthCredentials = in.AuthScheme, in.AuthCredentials
	// A push tells of state changes: progress and usage reports are not
	// among them.
	for _, e := range mesh.EventCatalog {
		if e.Kind == mesh.KindTaskRun && e.Type != mesh.EventTaskRunProgress && e.Type != mesh.EventTaskRunUsage {
			sub.Types = append(sub.Types, e.Type)
		}
	}
	return nil
}

// delivery is one request body and its format-specific headers.
type delivery struct {
	body        []byte
	contentType string
	header      http.Header
}

// payload encodes an event for a subscription's format: the structured
// CloudEvent, or the A2A push notification of the task state it announces.
func (s *Service) payload(sub *subscription, e *event.Event) (*delivery, error) {
	if !sub.a2a() {
		body, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		return &delivery{body: body, contentType: ContentType, header: http.Header{}}, nil
	}
	var run mesh.TaskRun
	if err := json.Unmarshal(e.Data(), &run); err != nil || run.ID == "" {
		return nil, fmt.Errorf("event %s carries no task run", e.ID())
	}
	version := a2atask.Version10
	if sub.Format == meshapi.WebhookFormatA2AV03 {
		version = a2atask.Version03
	}
	body, err := a2atask.PushPayload(&run, version, a2atask.DownloadURL(s.cfg.PublicURL))
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if sub.Token != "" {
		h.Set(HeaderA2AToken, sub.Token)
	}
	if sub.AuthScheme != "" {
		h.Set("Authorization", sub.AuthScheme+" "+sub.AuthCredentials)
	}
	return &delivery{body: body, contentType: "application/json", header: h}, nil
}

// retiring reports whether delivering e ends an A2A push subscription: its
// task reached a state it never leaves, so nothing more will be pushed.
func retiring(sub *subscription, eventType string) bool {
	return sub.a2a() && slices.Contains([]string{mesh.EventTaskRunCompleted, mesh.EventTaskRunFailed, mesh.EventTaskRunCanceled}, eventType)
}
