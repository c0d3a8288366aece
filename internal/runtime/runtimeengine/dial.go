package runtimeengine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/restclient"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
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
	API    *restclient.Client
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
		for _, servers := range natsURLs(cfg) {
			url := servers.all
			t, hello, err := DialNATS(ctx, NATSConfig{
				URL: url, Token: p.RuntimeToken, AgentID: p.AgentID, RuntimeID: p.RuntimeID,
				InboxPrefix: p.NATS.InboxPrefix, Regions: regions(p.NATS), HomeRegion: p.NATS.Region, HomeURLs: servers.home,
				Logger: cfg.Logger,
			})
			if err == nil {
				c := t.Connection()
				ev := cfg.Logger.Info()
				if home := p.NATS.Region; home != "" && c.Region != home {
					ev = cfg.Logger.Warn().Str("home_region", home)
				}
				ev.Str("transport", "nats").Str("url", c.Server).Str("region", c.Region).Msg("connected")
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
		hello, err := HTTPHello(ctx, cfg.API)
		if err != nil {
			return nil, nil, err
		}
		if errors.Is(natsErr, ErrNoPlatform) {
			// Reaching a server the platform does not answer through is a
			// deployment to fix, not a network that comes and goes.
			cfg.Logger.Error().Err(natsErr).Msg("the platform does not answer through its NATS server; working over HTTP until this runtime is restarted")
		} else {
			cfg.Logger.Warn().Err(natsErr).Msg("NATS unreachable; using the HTTP transport")
		}
		return dialedHTTP(cfg, hello, natsErr), hello, nil
	}
	hello, err := HTTPHello(ctx, cfg.API)
	if err != nil {
		return nil, nil, err
	}
	return dialedHTTP(cfg, hello, nil), hello, nil
}

func dialedHTTP(cfg DialConfig, hello *meshapi.HelloResponse, natsErr error) Transport {
	cfg.Logger.Info().Str("transport", "http").Str("api_base", cfg.API.Base()).Msg("connected")
	t := NewHTTP(HTTPConfig{API: cfg.API, AgentID: cfg.Profile.AgentID, Logger: cfg.Logger})
	t.(*httpTransport).natsErr = natsErr
	return t
}

// serverList is one connection's servers, comma-separated: all of them in
// the order to try, and those of the home region among them.
type serverList struct{ all, home string }

// natsURLs are the server lists the runtime tries, one connection each:
// the nats:// servers of the agent's home region followed by those of every
// fallback region, then the same for WebSocket. Within a region the
// servers are shuffled, so a region's runtimes spread over its servers;
// the regions keep their order. --nats-url replaces them, with no home.
func natsURLs(cfg DialConfig) []serverList {
	if cfg.NATSURL != "" {
		return []serverList{{all: cfg.NATSURL}}
	}
	n := cfg.Profile.NATS
	plain, ws := shuffled(n.URL), shuffled(n.WSURL)
	lists := []serverList{{home: strings.Join(plain, ",")}, {home: strings.Join(ws, ",")}}
	for _, f := range n.Fallbacks {
		plain = append(plain, shuffled(f.URL)...)
		ws = append(ws, shuffled(f.WSURL)...)
	}
	lists[0].all, lists[1].all = strings.Join(plain, ","), strings.Join(ws, ",")
	return slices.DeleteFunc(lists, func(l serverList) bool { return l.all == "" })
}

// regions are the names of the regions the profile knows of.
func regions(n profile.NATS) []string {
	var names []string
	if n.Region != "" {
		names = append(names, n.Region)
	}
	for _, f := range n.Fallbacks {
		names = append(names, f.Region)
	}
	return names
}

func shuffled(urls string) []string {
	var out []string
	for _, u := range strings.Split(urls, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// HTTPHello asks the REST API who the runtime is and how to work.
func HTTPHello(ctx context.Context, api *restclient.Client) (*meshapi.HelloResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return meshapi.Send(ctx, api, meshapi.OpRuntimeHello, meshapi.Empty{})
}
