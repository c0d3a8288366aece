package runtimeengine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/a2amesh/a2amesh/internal/apiclient"
	"github.com/a2amesh/a2amesh/internal/profile"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/rs/zerolog"
)

// Transport modes.
const (
	ModeAuto = "auto"
	ModeNATS = "nats"
	ModeHTTP = "http"
)

// DialConfig says how to reach the platform.
type DialConfig struct {
	Profile profile.Profile
	// Mode is auto (NATS as advertised at pairing, else HTTP), nats or http.
	Mode string
	// NATSURL overrides the advertised NATS URL.
	NATSURL string
	// API is the REST client for the profile's api_base.
	API    *apiclient.Client
	Logger zerolog.Logger
}

// Dial connects with the mode asked for. In auto mode a platform whose NATS
// cannot be reached is used over HTTP instead; a credential the platform
// refuses is an error whatever the mode, so the caller can ask for a re-pair.
func Dial(ctx context.Context, cfg DialConfig) (Transport, *meshapi.HelloResponse, error) {
	p := cfg.Profile
	if cfg.Mode == "" {
		cfg.Mode = ModeAuto
	}
	if cfg.Mode != ModeHTTP {
		var natsErr error
		for _, url := range natsURLs(cfg) {
			t, hello, err := DialNATS(ctx, NATSConfig{
				URL: url, Token: p.RuntimeToken, AgentID: p.AgentID, RuntimeID: p.RuntimeID,
				InboxPrefix: p.NATS.InboxPrefix, Logger: cfg.Logger,
			})
			if err == nil {
				cfg.Logger.Info().Str("transport", "nats").Str("url", url).Msg("connected")
				return t, hello, nil
			}
			if IsAuthError(err) {
				return nil, nil, err
			}
			natsErr = errors.Join(natsErr, err)
		}
		if natsErr == nil {
			natsErr = errors.New("the platform advertised no NATS URL at pairing")
		}
		// NATS refuses a revoked credential with the same answer as an
		// unreachable auth service; the REST API says which it is.
		if cfg.Mode == ModeNATS {
			if _, err := HTTPHello(ctx, cfg.API); IsAuthError(err) {
				return nil, nil, err
			}
			return nil, nil, fmt.Errorf("nats transport: %w", natsErr)
		}
		cfg.Logger.Warn().Err(natsErr).Msg("NATS unreachable; using the HTTP transport")
	}
	hello, err := HTTPHello(ctx, cfg.API)
	if err != nil {
		return nil, nil, err
	}
	cfg.Logger.Info().Str("transport", "http").Str("api_base", cfg.API.Base()).Msg("connected")
	return NewHTTP(HTTPConfig{API: cfg.API, AgentID: p.AgentID, Logger: cfg.Logger}), hello, nil
}

func natsURLs(cfg DialConfig) []string {
	if cfg.NATSURL != "" {
		return []string{cfg.NATSURL}
	}
	var urls []string
	for _, u := range []string{cfg.Profile.NATS.URL, cfg.Profile.NATS.WSURL} {
		if u != "" {
			urls = append(urls, u)
		}
	}
	return urls
}

// HTTPHello asks the REST API who the runtime is and how to work.
func HTTPHello(ctx context.Context, api *apiclient.Client) (*meshapi.HelloResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var hello meshapi.HelloResponse
	if _, err := api.Do(ctx, http.MethodPost, "/agent-runtimes/runtime/hello", nil, map[string]any{}, &hello); err != nil {
		return nil, err
	}
	return &hello, nil
}
