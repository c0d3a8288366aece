package pairing

import (
	"context"
	"strings"
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
// agent's events; one that presents an event consumer credential with
// permissions to read the events it was granted. Anything else is refused.
func (s *Service) onAuthRequest(msg *nats.Msg) {
	req, err := jwt.DecodeAuthorizationRequestClaims(string(msg.Data))
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Msg("undecodable auth callout request")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	uc := jwt.NewUserClaims(req.UserNkey)
	uc.Audience = server.DEFAULT_GLOBAL_ACCOUNT
	uc.Expires = time.Now().Add(s.cfg.UserJWTTTL).Unix()
	if token := consumerToken(&req.ConnectOptions); token != "" {
		con, err := s.authenticateConsumer(ctx, token)
		if err != nil {
			s.respondAuth(msg, req, "", "invalid or revoked credential")
			return
		}
		uc.Name = bus.ConsumerUserName(con.ID)
		consumerPermissions(&uc.Permissions, con)
	} else {
		id, err := s.authenticate(ctx, secret.Hash(req.ConnectOptions.Token))
		if err != nil {
			s.respondAuth(msg, req, "", "invalid or revoked credential")
			return
		}
		uc.Name = bus.RuntimeUserName(id.RuntimeID)
		runtimePermissions(&uc.Permissions, id)
	}
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

// consumerToken returns the event consumer credential a connection presents:
// as its token, or as a user name without a password (what the NATS CLI's
// --user flag sends), so both ways of passing it work.
func consumerToken(o *jwt.ConnectOptions) string {
	if strings.HasPrefix(o.Token, secret.PrefixConsumer) {
		return o.Token
	}
	if o.Password == "" && strings.HasPrefix(o.Username, secret.PrefixConsumer) {
		return o.Username
	}
	return ""
}

// consumerPermissions is everything an event consumer connection may do:
// subscribe to its subjects (live, core NATS), and create and use JetStream
// consumers on the event stream whose names are its own and whose filter is
// one of its subjects. The filtered create subject carries the filter, and
// the server checks it against the consumer's configuration, so a filter
// outside its subjects is refused by the server itself.
func consumerPermissions(p *jwt.Permissions, c *consumerRecord) {
	subjects := c.subjects()
	inbox := bus.ConsumerInboxPrefix(c.ID)
	p.Sub.Allow.Add(inbox + ".>")
	p.Sub.Allow.Add(subjects...)
	const api = "$JS.API.CONSUMER."
	stream := bus.EventStream
	for _, name := range bus.ConsumerNames(c.ID) {
		for _, subject := range subjects {
			p.Pub.Allow.Add(api + "CREATE." + stream + "." + name + "." + subject)
		}
		p.Pub.Allow.Add(
			api+"INFO."+stream+"."+name,
			api+"MSG.NEXT."+stream+"."+name,
			api+"DELETE."+stream+"."+name,
			"$JS.ACK."+stream+"."+name+".>",
			"$JS.FC."+stream+"."+name+".>",
		)
	}
	// Stream names only (no stream contents): the NATS CLI looks the stream
	// up by name before it adds a consumer.
	p.Pub.Allow.Add("$JS.API.STREAM.NAMES")
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
