package a2aserver

import (
	"net/http"
	"strings"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/meshapi"
)

// routeKind says which part of the endpoint serves a route.
type routeKind int

const (
	kindCard routeKind = iota
	kindJSONRPC
	kindREST
	kindAPIKeys
	kindArtifact
	kindRuntimeArtifact
)

// Route is one HTTP route of the A2A endpoint, in ServeMux syntax.
type Route struct {
	Pattern string
	kind    routeKind
	version string
}

// restPaths are the HTTP+JSON routes of spec 1.0 §11.3 below an agent (and,
// for 0.3, below its /v1).
var restPaths = []string{
	"POST {p}/message:send",
	"POST {p}/message:stream",
	"GET {p}/tasks",
	"GET {p}/tasks/{taskIdAndAction}",
	"POST {p}/tasks/{taskIdAndAction}",
	"POST {p}/tasks/{taskId}/pushNotificationConfigs",
	"GET {p}/tasks/{taskId}/pushNotificationConfigs",
	"GET {p}/tasks/{taskId}/pushNotificationConfigs/{configId}",
	"DELETE {p}/tasks/{taskId}/pushNotificationConfigs/{configId}",
}

// agentPrefix is where an agent's endpoint is. /a2a itself, and /a2a/<word>
// without a further segment (the older endpoints' /a2a/discovery, /a2a/message,
// ...), are left to other endpoints: every route here has at least one segment
// after the agent id, except the JSON-RPC endpoint, which is POST only and
// more general than any literal route ServeMux prefers over it.
const agentPrefix = "/a2a/{agentId}"

// Routes lists every route of the endpoint. The gateway registers each and hands
// its requests to Serve.
func Routes() []Route {
	rs := []Route{
		{Pattern: "GET " + agentPrefix + "/.well-known/agent-card.json", kind: kindCard},
		{Pattern: "GET " + agentPrefix + "/agent-card", kind: kindCard},
		{Pattern: "POST " + agentPrefix, kind: kindJSONRPC},
		{Pattern: "POST " + agentPrefix + "/{$}", kind: kindJSONRPC},
		{Pattern: "GET " + agentPrefix + "/extendedAgentCard", kind: kindREST, version: a2atask.Version10},
		{Pattern: "GET " + agentPrefix + "/v1/card", kind: kindREST, version: a2atask.Version03},
		{Pattern: meshapi.OpA2AKeysCreate.REST.Pattern(), kind: kindAPIKeys},
		{Pattern: meshapi.OpA2AKeysList.REST.Pattern(), kind: kindAPIKeys},
		{Pattern: meshapi.OpA2AKeysRevoke.REST.Pattern(), kind: kindAPIKeys},
		{Pattern: "GET " + agentPrefix + "/artifacts/{artifactId}", kind: kindArtifact},
		{Pattern: "GET /agent-runtimes/runtime/artifacts/{artifactId}/content", kind: kindRuntimeArtifact},
	}
	for _, p := range restPaths {
		rs = append(rs,
			Route{Pattern: expand(p, agentPrefix), kind: kindREST, version: a2atask.Version10},
			Route{Pattern: expand(p, agentPrefix+"/v1"), kind: kindREST, version: a2atask.Version03},
		)
	}
	return rs
}

func expand(p, prefix string) string { return strings.ReplaceAll(p, "{p}", prefix) }

// Runtime reports whether the route is for runtimes (X-Runtime-Token): the
// gateway authenticates those itself and passes the runtime's agent.
func (rt Route) Runtime() bool { return rt.kind == kindRuntimeArtifact }

// People reports whether the route is for people (an agent's API keys): the
// gateway admits the owner credential or a web sign-in session before Serve.
func (rt Route) People() bool { return rt.kind == kindAPIKeys }

// Serve answers one request of a route. runtimeAgent is the authenticated
// runtime's agent on runtime routes, "" otherwise.
func (s *Server) Serve(rt Route, runtimeAgent string, w http.ResponseWriter, r *http.Request) {
	switch rt.kind {
	case kindCard:
		s.serveCard(w, r)
	case kindJSONRPC:
		s.serveJSONRPC(w, r)
	case kindREST:
		s.serveREST(w, r, rt.version)
	case kindAPIKeys:
		s.serveAPIKeys(w, r)
	case kindArtifact:
		s.serveArtifact(w, r)
	case kindRuntimeArtifact:
		s.serveRuntimeArtifact(w, r, runtimeAgent)
	}
}
