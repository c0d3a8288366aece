package profile

import (
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

// Public is a profile as it may be shown: in status --json, logs and chat. It
// has no field for the runtime token (seed 001 §5.2), and URLs carry no user
// information, which could be a credential too.
type Public struct {
	Name               string              `json:"profile_name"`
	AgentID            string              `json:"agent_id"`
	RuntimeID          string              `json:"runtime_id"`
	APIBase            string              `json:"api_base"`
	LocalAgentEndpoint string              `json:"local_agent_endpoint"`
	Adapter            string              `json:"adapter"`
	LastHeartbeatAt    time.Time           `json:"last_heartbeat_at,omitzero"`
	HeartbeatTimeoutMS int64               `json:"heartbeat_timeout_ms,omitempty"`
	LocalExecutor      LocalExecutor       `json:"local_executor,omitzero"`
	DeviceName         string              `json:"device_name,omitempty"`
	PairedAt           time.Time           `json:"paired_at,omitzero"`
	Platform           adapterapi.Platform `json:"platform,omitzero"`
	NATS               NATS                `json:"nats,omitzero"`
	Connection         Connection          `json:"connection,omitzero"`
	SupervisedAdapter  SupervisedAdapter   `json:"supervised_adapter,omitzero"`
	// HasRuntimeToken tells whether the profile can authenticate, without
	// saying anything about the token.
	HasRuntimeToken bool `json:"has_runtime_token"`
	// HasSealingKey tells whether the runtime can open environment
	// variables sealed to it, without saying anything about the key.
	HasSealingKey bool `json:"has_sealing_key"`
}

// Public returns the displayable view of p.
func (p Profile) Public() Public {
	nats := p.NATS
	nats.URL = redactURL(nats.URL)
	nats.WSURL = redactURL(nats.WSURL)
	nats.Fallbacks = nil
	for _, f := range p.NATS.Fallbacks {
		nats.Fallbacks = append(nats.Fallbacks, NATSRegion{Region: f.Region, URL: redactURL(f.URL), WSURL: redactURL(f.WSURL)})
	}
	conn := p.Connection
	conn.Server = redactURL(conn.Server)
	conn.APIBase = redactURL(conn.APIBase)
	conn.LocalAdapter.Endpoint = redactURL(conn.LocalAdapter.Endpoint)
	return Public{
		Name:               p.Name(),
		AgentID:            p.AgentID,
		RuntimeID:          p.RuntimeID,
		APIBase:            redactURL(p.APIBase),
		LocalAgentEndpoint: redactURL(p.LocalAgentEndpoint),
		Adapter:            p.Adapter,
		LastHeartbeatAt:    p.LastHeartbeatAt,
		HeartbeatTimeoutMS: p.HeartbeatTimeoutMS,
		LocalExecutor:      p.LocalExecutor,
		DeviceName:         p.DeviceName,
		PairedAt:           p.PairedAt,
		Platform:           p.Platform,
		NATS:               nats,
		Connection:         conn,
		SupervisedAdapter:  p.SupervisedAdapter,
		HasRuntimeToken:    p.RuntimeToken != "",
		HasSealingKey:      p.SealingKey != "",
	}
}

// Format prints the public view for every verb, so %v, %+v, %#v and %s of a
// Profile, or of anything containing one, never show the token.
func (p Profile) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), p.Public())
}

// String returns the public view in %v form.
func (p Profile) String() string {
	return fmt.Sprint(p.Public())
}

// LogValue makes log/slog log the public view, whatever the handler.
func (p Profile) LogValue() slog.Value {
	return slog.AnyValue(p.Public())
}

// redactURL replaces user information in a URL, which may be a credential
// (nats://user:pass@host), with a placeholder that still shows it was there.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = url.User("redacted")
	return u.String()
}
