package pairing

import (
	"context"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// onAuthRequest answers the NATS server's auth callout: a connection that
// presents a runtime token is admitted with permissions for its own agent's
// queue consumer, its own runtime subjects, its own reply inbox and its
// agent's events, and nothing else. Anything else is refused.
func (s *Service) onAuthRequest(msg *nats.Msg) {
	req, err := jwt.DecodeAuthorizationRequestClaims(string(msg.Data))
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Msg("undecodable auth callout request")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := s.authenticate(ctx, secret.Hash(req.ConnectOptions.Token))
	if err != nil {
		s.respondAuth(msg, req, "", "invalid or revoked credential")
		return
	}
	uc := jwt.NewUserClaims(req.UserNkey)
	uc.Name = bus.RuntimeUserName(id.RuntimeID)
	uc.Audience = server.DEFAULT_GLOBAL_ACCOUNT
	uc.Expires = time.Now().Add(s.cfg.UserJWTTTL).Unix()
	runtimePermissions(&uc.Permissions, id)
	ujwt, err := uc.Encode(s.cfg.AuthIssuer)
	if err != nil {
		s.cfg.Logger.Error().Err(err).Msg("user jwt not signed")
		s.respondAuth(msg, req, "", "internal error")
		return
	}
	s.respondAuth(msg, req, ujwt, "")
}

// runtimePermissions is everything a runtime connection may do.
func runtimePermissions(p *jwt.Permissions, id *meshapi.Identity) {
	consumer := bus.QueueConsumer(id.AgentID)
	p.Pub.Allow.Add(
		bus.RuntimeSubjectPrefix(id.AgentID, id.RuntimeID),
		"$JS.API.CONSUMER.INFO."+bus.QueueStream+"."+consumer,
		"$JS.API.CONSUMER.MSG.NEXT."+bus.QueueStream+"."+consumer,
		"$JS.ACK."+bus.QueueStream+"."+consumer+".>",
	)
	p.Sub.Allow.Add(
		bus.RuntimeInboxPrefix(id.RuntimeID)+".>",
		bus.AgentEventsFilter(id.AgentID),
	)
}

func (s *Service) respondAuth(msg *nats.Msg, req *jwt.AuthorizationRequestClaims, userJWT, errText string) {
	rc := jwt.NewAuthorizationResponseClaims(req.UserNkey)
	rc.Audience = req.Server.ID
	rc.Jwt = userJWT
	rc.Error = errText
	token, err := rc.Encode(s.cfg.AuthIssuer)
	if err != nil {
		s.cfg.Logger.Error().Err(err).Msg("auth callout response not signed")
		return
	}
	_ = msg.Respond([]byte(token))
}
