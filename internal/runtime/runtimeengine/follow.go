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
func FollowHome(ctx context.Context, cfg DialConfig, tr Transport, hello *meshapi.HelloResponse) (Transport, *meshapi.HelloResponse, *profile.NATS) {
	qctx, cancel := context.WithTimeout(ctx, connectionTimeout)
	defer cancel()
	now, err := meshapi.Send(qctx, tr.Sender(), meshapi.OpRuntimeConnection, meshapi.Empty{})
	if err != nil {
		cfg.Logger.Debug().Err(err).Msg("the platform did not say where to connect now; keeping the profile's addresses")
		return tr, hello, nil
	}
	fresh := profileNATS(*now)
	if reflect.DeepEqual(fresh, cfg.Profile.NATS) {
		return tr, hello, nil
	}
	log := cfg.Logger.Info().Str("home_region", fresh.Region).Str("home_region_before", cfg.Profile.NATS.Region)
	if cfg.NATSURL != "" || cfg.Mode == ModeHTTP {
		log.Msg("the platform gives this runtime new NATS addresses; stored in the profile")
		return tr, hello, &fresh
	}
	log.Msg("the platform gives this runtime new NATS addresses (its agent's home region may have moved); connecting with them")
	cfg.Profile.NATS = fresh
	moved, movedHello, err := Dial(ctx, cfg)
	if err != nil {
		cfg.Logger.Warn().Err(err).Msg("could not connect with the new addresses; staying connected as before")
		return tr, hello, &fresh
	}
	tr.Close()
	return moved, movedHello, &fresh
}
