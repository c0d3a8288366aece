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
// runs) and its own reply inbox; one that presents an event consumer
// credential in the consumers account with permissions to read its durable
// consumer, or, connecting as bus.LiveEventsUser, in the live events
// account with permissions to follow the events it was granted. Anything
// else is refused, and so is a consumer credential on a leaf node
// connection: the server does not hold a leaf node to the permissions it
// holds a client to (a leaf may acknowledge any durable's messages), and
// sites connect runtimes, not consumers. The accounts bound what any of
// them can reach at all (bus.AccountsConfig); the permissions narrow it to
// one agent or credential within the account.
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
	if token, live := consumerToken(&req.ConnectOptions); token != "" {
		if req.ClientInformation.Kind == leafKind {
			s.cfg.Logger.Warn().Str("host", req.ClientInformation.Host).Msg("refused a leaf node connection presenting an event consumer credential: an event consumer credential cannot connect a leaf node")
			s.respondAuth(msg, req, "", "an event consumer credential cannot connect a leaf node")
			return
		}
		con, err := s.authenticateConsumer(ctx, token)
		if err != nil {
			s.respondAuth(msg, req, "", "invalid or revoked credential")
			return
		}
		uc.Name = bus.ConsumerUserName(con.ID)
		if live {
			uc.Audience = bus.AccountLiveEvents
			liveEventPermissions(&uc.Permissions, con)
		} else {
			uc.Audience = bus.AccountConsumers
			consumerPermissions(&uc.Permissions, con)
		}
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

// leafKind is how the auth callout's request names a leaf node connection.
const leafKind = "Leafnode"

// runtimePermissions is everything a runtime connection may do.
func runtimePermissions(p *jwt.Permissions, id *meshapi.Identity) {
	// Requests under its own subjects only: no JetStream API at all (the
	// task queue offers work, and names canceled runs, in answer to a
	// request), and answers on its own inbox only.
	p.Pub.Allow.Add(bus.RuntimeSubjectPrefix(id.AgentID, id.RuntimeID))
	p.Sub.Allow.Add(bus.RuntimeInboxPrefix(id.RuntimeID) + ".>")
}

// consumerToken returns the event consumer credential a connection presents,
// and whether it connects to follow events live: as its token, or as a user
// name without a password (what the NATS CLI's --user flag sends), it reads
// its durable consumer; as the password of bus.LiveEventsUser, it follows
// events live.
func consumerToken(o *jwt.ConnectOptions) (token string, live bool) {
	switch {
	case o.Username == bus.LiveEventsUser && strings.HasPrefix(o.Password, secret.PrefixConsumer):
		return o.Password, true
	case strings.HasPrefix(o.Token, secret.PrefixConsumer):
		return o.Token, false
	case o.Password == "" && strings.HasPrefix(o.Username, secret.PrefixConsumer):
		return o.Username, false
	}
	return "", false
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

// consumerPermissions is everything an event consumer connection reading
// its durable consumer may do: read, acknowledge and inspect its own
// durable consumer on its event stream, which the platform created with
// the credential's subjects as its filter, with answers on its own inbox.
// The account imports these subjects for every stream; this allow-list is
// what narrows them to the credential's one consumer.
func consumerPermissions(p *jwt.Permissions, c *consumerRecord) {
	p.Sub.Allow.Add(bus.ConsumerInboxPrefix(c.ID) + ".>")
	name := bus.ConsumerNameBase(c.ID)
	for _, stream := range c.streams() {
		p.Pub.Allow.Add(
			bus.UntrustedJSAPI("CONSUMER.INFO."+stream+"."+name),
			bus.UntrustedJSAPI("CONSUMER.MSG.NEXT."+stream+"."+name),
			"$JS.ACK."+stream+"."+name+".>",
		)
	}
}

// liveEventPermissions is everything an event consumer connection following
// events live may do: subscribe to its subjects, and publish nothing.
func liveEventPermissions(p *jwt.Permissions, c *consumerRecord) {
	p.Sub.Allow.Add(c.subjects()...)
	p.Pub.Deny.Add(">")
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
