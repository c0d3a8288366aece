package runtimeengine

import (
	"context"
	"reflect"
	"time"

	"github.com/a2amesh/a2amesh/internal/runtime/profile"
	"github.com/a2amesh/a2amesh/meshapi"
)

// connectionTimeout bounds the question of where to connect.
const connectionTimeout = 10 * time.Second

// FollowHome asks the platform, once connected, where the runtime should
// connect now: what pairing would answer today. An agent's home region can
// move after its runtime was paired, and regions can change their
// addresses. When the answer differs from the profile's, FollowHome
// returns it (for the caller to store in the profile) and, unless the
// addresses were overridden (--nats-url) or the runtime works over HTTP by
// choice, connects again with it and returns the new transport and hello
// in place of tr and hello (closing tr). A platform that cannot answer, or
// a new connection that fails, leaves the runtime as it was.
//
// The answer never makes the runtime forget a region: a region the profile
// knows and the answer leaves out is kept as a fallback (see keepRegions).
func FollowHome(ctx context.Context, cfg DialConfig, tr Transport, hello *meshapi.HelloResponse) (Transport, *meshapi.HelloResponse, *profile.NATS) {
	qctx, cancel := context.WithTimeout(ctx, connectionTimeout)
	defer cancel()
	now, err := meshapi.Send(qctx, tr.Sender(), meshapi.OpRuntimeConnection, meshapi.Empty{})
	if err != nil {
		cfg.Logger.Debug().Err(err).Msg("the platform did not say where to connect now; keeping the profile's addresses")
		return tr, hello, nil
	}
	fresh := keepRegions(profileNATS(*now), cfg.Profile.NATS)
	if reflect.DeepEqual(fresh, cfg.Profile.NATS) {
		return tr, hello, nil
	}
	log := cfg.Logger.Info().Str("home_region", fresh.Region).Str("home_region_before", cfg.Profile.NATS.Region)
	if cfg.NATSURL != "" || cfg.Mode == ModeHTTP {
		log.Msg("the platform gives this runtime new NATS addresses; stored in the profile")
		return tr, hello, &fresh
	}
	if fresh.Region == cfg.Profile.NATS.Region && fresh.URL == cfg.Profile.NATS.URL && fresh.WSURL == cfg.Profile.NATS.WSURL {
		log.Msg("the platform gives this runtime new addresses of other regions, to fall back to; connecting with them")
	} else {
		log.Msg("the platform gives this runtime new NATS addresses (its agent's home region may have moved); connecting with them")
	}
	cfg.Profile.NATS = fresh
	moved, movedHello, err := Dial(ctx, cfg)
	if err != nil {
		cfg.Logger.Warn().Err(err).Msg("could not connect with the new addresses; staying connected as before")
		return tr, hello, &fresh
	}
	tr.Close()
	return moved, movedHello, &fresh
}

// keepRegions is the platform's answer fresh with every region of before
// that it leaves out appended as a fallback, in before's order. The region
// that answers tells of the regions its copy of their addresses holds, and
// a region started a moment ago may not have heard of all of them yet: a
// runtime that took such an answer as the whole list would have nowhere to
// go when its home region stops answering. A region named in the answer
// takes the answer's addresses. A region that is gone for good stays
// listed, tried (and failing at once) only while the home region is out of
// reach, until the runtime is paired again.
func keepRegions(fresh, before profile.NATS) profile.NATS {
	named := map[string]bool{fresh.Region: true}
	for _, f := range fresh.Fallbacks {
		named[f.Region] = true
	}
	kept := append([]profile.NATSRegion{{Region: before.Region, URL: before.URL, WSURL: before.WSURL}}, before.Fallbacks...)
	for _, r := range kept {
		if r.Region == "" || named[r.Region] || (r.URL == "" && r.WSURL == "") {
			continue
		}
		named[r.Region] = true
		fresh.Fallbacks = append(fresh.Fallbacks, r)
	}
	return fresh
}
