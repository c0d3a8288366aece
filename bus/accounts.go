package bus

import (
	"fmt"
	"strings"
	"time"
)

// NATS accounts: the trust boundaries of the bus. The services and every
// stream, bucket and object store live in AccountPlatform. Untrusted
// connections (runtimes, event consumer credentials) are placed by the auth
// callout in accounts of their own that import only what such a connection
// needs. A request that crosses an import gets a reply subject the server
// makes up in the exporting account and maps back to the importer, so a reply
// subject chosen by an untrusted client can only ever land back in its own
// account: never on the JetStream API, a bucket, or a service subject.
const (
	// AccountPlatform holds the services and JetStream.
	AccountPlatform = "MESH"
	// AccountRuntimes holds runtime connections; each is further confined
	// to its own agent by the permissions the auth callout gives it.
	AccountRuntimes = "MESH_RUNTIMES"
	// AccountConsumers holds event consumer credentials' connections that
	// read their durable consumer.
	AccountConsumers = "MESH_CONSUMERS"
	// AccountLiveEvents holds event consumer credentials' connections that
	// follow events live (core NATS). It imports the event subjects and no
	// service at all, so nothing can be asked from it, and no answer can
	// be aimed at a subscription in it: within one account the server
	// delivers an answer to whatever subject the asker named as its reply.
	AccountLiveEvents = "MESH_LIVE"
	// AccountSystem is the NATS system account.
	AccountSystem = "SYS"
)

// Subjects in AccountPlatform that reach the system account's per-server
// services, so the platform can close a revoked credential's connections on
// every server of a cluster without a system account credential of its own.
const (
	// SystemConnzSubject asks every server for its connections (ConnzOptions
	// as the body); each server answers once.
	SystemConnzSubject = "mesh.sys.connz"
	systemKickPrefix   = "mesh.sys.kick."
)

// SystemKickSubject asks the server with the given id to close a connection
// (body {"cid": N}).
func SystemKickSubject(serverID string) string { return systemKickPrefix + serverID }

// JetStreamAPIPrefix is where an untrusted account reaches the few
// JetStream API subjects it imports (its consumer's info and next message).
// They cannot keep their own names there: the server answers the JetStream
// API itself in an account without JetStream ("not enabled for account").
// Clients use it with jetstream.NewWithAPIPrefix.
const JetStreamAPIPrefix = "mesh.js.api"

// UntrustedJSAPI is the subject an untrusted account publishes to for the
// JetStream API subject api (e.g. "CONSUMER.INFO.MESH_EVENTS.con_x").
func UntrustedJSAPI(api string) string { return JetStreamAPIPrefix + "." + api }

// accountImport is one service or stream an untrusted account takes from the
// platform account.
type accountImport struct {
	subject string
	// local, when set, is the subject the importing account uses for it.
	local  string
	stream bool
	// streamed: a request may get many replies (a pull request's messages).
	streamed bool
}

// runtimeImports is what a runtime needs of the platform: its requests,
// and nothing else. Everything the platform tells a runtime is the answer
// to a request of its own (the task queue offers its agent's pending runs
// in answer to one, and names its canceled runs in answer to another), so
// a runtime subscribes only to its own reply inbox. NATS lets a client
// name any subject of its account as a request's reply, and the server
// delivers the answer there: an account in which one runtime subscribed to
// a subject another could name would let that other runtime aim answers
// at it. No JetStream API either: a runtime never touches a stream.
func runtimeImports() []accountImport {
	return []accountImport{
		{subject: subjRuntime + ".>"},
	}
}

// consumerImports is what an event consumer credential needs to read its
// durable consumer on the event stream (pull, ack, info). Creating a
// consumer is not among them: a consumer's configuration names subjects in
// the platform account (a push consumer's delivery subject), so only the
// platform creates them. Live events are not imported here but in
// AccountLiveEvents, for the reason given at runtimeImports: in this
// account a credential's requests are answered on the reply subject it
// names, so a subscription to events here would receive what another
// credential aims at it.
//
// Every stream is imported, not only EventStream: a credential for one
// agent reads the event stream of the agent's home region
// (RegionEventStream), and regions come and go without the servers'
// configuration changing. What a connection may reach of them is its one
// consumer, by the permissions the auth callout gives it.
func consumerImports() []accountImport {
	return []accountImport{
		{subject: jsConsumerInfo("*"), local: untrustedJS(jsConsumerInfo("*"))},
		{subject: jsConsumerNext("*"), local: untrustedJS(jsConsumerNext("*")), streamed: true},
		{subject: jsAck("*")},
	}
}

// liveEventImports is what a credential following events live needs: the
// event subjects, and no service.
func liveEventImports() []accountImport {
	return []accountImport{
		{subject: subjEvents + ".>", stream: true},
	}
}

// LiveEventsUser is the user name with which a consumer credential
// (given as the password) connects to follow events live, in
// AccountLiveEvents. Given as a token, or as the user name alone, the
// credential reads its durable consumer in AccountConsumers.
const LiveEventsUser = "live"

func jsConsumerInfo(stream string) string { return "$JS.API.CONSUMER.INFO." + stream + ".*" }
func jsConsumerNext(stream string) string { return "$JS.API.CONSUMER.MSG.NEXT." + stream + ".*" }
func jsAck(stream string) string          { return "$JS.ACK." + stream + ".>" }

func untrustedJS(apiSubject string) string {
	return UntrustedJSAPI(strings.TrimPrefix(apiSubject, "$JS.API."))
}

// DefaultServiceUser is the NATS user platform services connect as to an
// external NATS deployment (an auth_callout auth_user: deploy/nats).
const DefaultServiceUser = "mesh-service"

// NATSUser is one trusted user in a server configuration: an nkey, or a user
// name and password. Values are written as they are, so a password may be a
// configuration variable such as $MESH_SERVICE_PASSWORD.
type NATSUser struct {
	Nkey     string
	User     string
	Password string
}

func (u NATSUser) id() string {
	if u.Nkey != "" {
		return u.Nkey
	}
	return u.User
}

func (u NATSUser) render() string {
	if u.Nkey != "" {
		return fmt.Sprintf("{ nkey: %s }", u.Nkey)
	}
	return fmt.Sprintf("{ user: %s, password: %s }", u.User, u.Password)
}

// AccountsConfig is the part of a NATS server configuration that sets up the
// platform's accounts and the auth callout. `a2a-platform up` gives it to
// its embedded server; deploy/nats/accounts.conf is the same text for
// external servers.
type AccountsConfig struct {
	// Services is the user the platform services connect as.
	Services NATSUser
	// AuthIssuer is the public account nkey that signs auth callout answers
	// (or a configuration variable holding it).
	AuthIssuer string
}

// Render returns the configuration text.
func (c AccountsConfig) Render() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# The platform's NATS accounts and auth callout, the same that")
	w("# `a2a-platform up` gives its embedded server. Generated from")
	w("# bus.AccountsConfig (a test keeps this file equal to it).")
	w("accounts {")
	w("  # Services and JetStream. Nothing untrusted connects here.")
	w("  %s: {", AccountPlatform)
	w("    jetstream: enabled")
	w("    users: [ %s ]", c.Services.render())
	w("    exports: [")
	// Each subject is exported to the accounts that import it, in order.
	var exports []accountImport
	importers := map[string][]string{}
	for _, acc := range []struct {
		name    string
		imports []accountImport
	}{{AccountRuntimes, runtimeImports()}, {AccountConsumers, consumerImports()}, {AccountLiveEvents, liveEventImports()}} {
		for _, imp := range acc.imports {
			if importers[imp.subject] == nil {
				exports = append(exports, imp)
			}
			importers[imp.subject] = append(importers[imp.subject], acc.name)
		}
	}
	for _, imp := range exports {
		w("      %s", exportLine(imp, importers[imp.subject]))
	}
	w("    ]")
	w("    imports: [")
	w("      { service: { account: %s, subject: \"$SYS.REQ.SERVER.PING.CONNZ\" }, to: %q }", AccountSystem, SystemConnzSubject)
	w("      { service: { account: %s, subject: \"$SYS.REQ.SERVER.*.KICK\" }, to: %q }", AccountSystem, systemKickPrefix+"*")
	w("    ]")
	w("  }")
	importing := func(comment, account string, imports []accountImport) {
		w("  # %s", comment)
		w("  %s: {", account)
		w("    imports: [")
		for _, imp := range imports {
			w("      %s", importLine(imp))
		}
		w("    ]")
		w("  }")
	}
	importing("Runtimes: admitted by the auth callout, each confined to its agent.", AccountRuntimes, runtimeImports())
	importing("Event consumer credentials reading their durable consumer: admitted by the auth callout.", AccountConsumers, consumerImports())
	importing("Event consumer credentials following events live: admitted by the auth callout; no services.", AccountLiveEvents, liveEventImports())
	w("  %s: {", AccountSystem)
	w("    exports: [")
	w("      { service: \"$SYS.REQ.SERVER.PING.CONNZ\", response_type: stream, accounts: [ %s ] }", AccountPlatform)
	w("      { service: \"$SYS.REQ.SERVER.*.KICK\", accounts: [ %s ] }", AccountPlatform)
	w("    ]")
	w("  }")
	w("}")
	w("system_account: %s", AccountSystem)
	w("")
	w("authorization {")
	// How long a connecting client may take to be admitted, auth callout
	// included: the server's default of 2 s refuses runtimes when a few
	// thousand connect at once (a platform restart) and the callout
	// service answers them in turn.
	w("  timeout: %d", int(AuthTimeout/time.Second))
	w("  auth_callout {")
	w("    issuer: %s", c.AuthIssuer)
	w("    account: %s", AccountPlatform)
	w("    auth_users: [ %s ]", c.Services.id())
	w("  }")
	w("}")
	return b.String()
}

// AuthTimeout is how long the server waits for a connecting client to be
// admitted, the auth callout's answer included.
const AuthTimeout = 5 * time.Second

func exportLine(imp accountImport, importers []string) string {
	accounts := strings.Join(importers, ", ")
	if imp.stream {
		return fmt.Sprintf("{ stream: %q, accounts: [ %s ] }", imp.subject, accounts)
	}
	if imp.streamed {
		return fmt.Sprintf("{ service: %q, response_type: stream, accounts: [ %s ] }", imp.subject, accounts)
	}
	return fmt.Sprintf("{ service: %q, accounts: [ %s ] }", imp.subject, accounts)
}

func importLine(imp accountImport) string {
	kind := "service"
	if imp.stream {
		kind = "stream"
	}
	if imp.local != "" {
		return fmt.Sprintf("{ %s: { account: %s, subject: %q }, to: %q }", kind, AccountPlatform, imp.subject, imp.local)
	}
	return fmt.Sprintf("{ %s: { account: %s, subject: %q } }", kind, AccountPlatform, imp.subject)
}
