package credentials

import (
	"context"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
)

// onAuthRequest answers the NATS server's auth callout: a connection that
// presents a runtime token is placed in the runtimes account with permissions
// for its own runtime subjects (through which it is offered its agent's
// runs), its own reply inbox and its agent's events; one that presents an event consumer
// credential in the consumers account with permissions to read the events it
// was granted. Anything else is refused. The accounts bound what any of them
// can reach at all (bus.AccountsConfig); the permissions narrow it to one
// agent or credential within the account.
func (s *Service) onAuthRequest(msg *nats.Msg) {
	req, err := jwt.DecodeAuthorizationRequestClaims(string(msg.Data))
	if err != nil {
		s.cfg.Logger.Warn().Err(err).Msg("undecodable auth callout request")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	uc := jwt.NewUserClaims(req.UserNkey)
	uc.Expires = time.Now().Add(s.cfg.UserJWTTTL).Unix()
	if token := consumerToken(&req.ConnectOptions); token != "" {
		con, err := s.authenticateConsumer(ctx, token)
		if err != nil {
			s.respondAuth(msg, req, "", "invalid or revoked credential")
			return
		}
		uc.Name = bus.ConsumerUserName(con.ID)
		uc.Audience = bus.AccountConsumers
		consumerPermissions(&uc.Permissions, con)
	} else {
		id, err := s.authenticate(ctx, secret.Hash(runtimeToken(&req.ConnectOptions)))
		if err != nil {
			s.respondAuth(msg, req, "", "invalid or revoked credential")
			return
		}
		uc.Name = bus.RuntimeUserName(id.RuntimeID)
		uc.Audience = bus.AccountRuntimes
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
	// Requests under its own subjects only: no JetStream API at all (the
	// task queue offers work in answer to a request).
	p.Pub.Allow.Add(bus.RuntimeSubjectPrefix(id.AgentID, id.RuntimeID))
	p.Sub.Allow.Add(
		bus.RuntimeInboxPrefix(id.RuntimeID)+".>",
		bus.AgentEventsFilter(id.AgentID),
		bus.CancelFilter(id.AgentID),
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

// runtimeToken returns the runtime credential a connection presents: as
// its token (what a2a-runtime sends), or as the password of a URL's user
// part, nats-leaf://runtime:<token>@host (what a site's leaf node sends), so
// the credential stays out of the user name the NATS server logs when it
// refuses the connection.
func runtimeToken(o *jwt.ConnectOptions) string {
	if o.Token != "" {
		return o.Token
	}
	if strings.HasPrefix(o.Password, secret.PrefixRuntime) {
		return o.Password
	}
	return ""
}

// consumerPermissions is everything an event consumer connection may do:
// subscribe to its subjects (live, core NATS), and read, acknowledge and
// inspect its own durable consumer on the event stream, which the platform
// created with the credential's subjects as its filter.
func consumerPermissions(p *jwt.Permissions, c *consumerRecord) {
	subjects := c.subjects()
	p.Sub.Allow.Add(bus.ConsumerInboxPrefix(c.ID) + ".>")
	p.Sub.Allow.Add(subjects...)
	name := bus.ConsumerNameBase(c.ID)
	p.Pub.Allow.Add(
		bus.UntrustedJSAPI("CONSUMER.INFO."+bus.EventStream+"."+name),
		bus.UntrustedJSAPI("CONSUMER.MSG.NEXT."+bus.EventStream+"."+name),
		"$JS.ACK."+bus.EventStream+"."+name+".>",
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
