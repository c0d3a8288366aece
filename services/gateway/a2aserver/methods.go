package a2aserver

import (
	"net/http"
	"strings"

	"github.com/a2amesh/a2amesh/internal/a2atask"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Methods of the A2A protocol, by their 1.0 names; each needs one scope.
const (
	methodSend         = "SendMessage"
	methodStream       = "SendStreamingMessage"
	methodGet          = "GetTask"
	methodList         = "ListTasks"
	methodCancel       = "CancelTask"
	methodSubscribe    = "SubscribeToTask"
	methodPushCreate   = "CreateTaskPushNotificationConfig"
	methodPushGet      = "GetTaskPushNotificationConfig"
	methodPushList     = "ListTaskPushNotificationConfigs"
	methodPushDelete   = "DeleteTaskPushNotificationConfig"
	methodExtendedCard = "GetExtendedAgentCard"
)

// scopes is the scope each method needs (see docs/a2a.md).
var scopes = map[string]string{
	methodSend:         meshapi.ScopeSend,
	methodStream:       meshapi.ScopeSend,
	methodGet:          meshapi.ScopeRead,
	methodList:         meshapi.ScopeRead,
	methodSubscribe:    meshapi.ScopeRead,
	methodExtendedCard: meshapi.ScopeRead,
	methodCancel:       meshapi.ScopeCancel,
	methodPushCreate:   meshapi.ScopePush,
	methodPushGet:      meshapi.ScopePush,
	methodPushList:     meshapi.ScopePush,
	methodPushDelete:   meshapi.ScopePush,
}

// credentialOnly are the methods a caller without a credential never
// calls, not even on a public agent, whatever scopes it has there: the
// extended card tells who runs the agent (spec 1.0 §13.3).
var credentialOnly = map[string]bool{methodExtendedCard: true}

// rpcMethods maps each version's JSON-RPC method names to the methods.
var rpcMethods = map[string]map[string]string{
	a2atask.Version10: {
		methodSend: methodSend, methodStream: methodStream, methodGet: methodGet, methodList: methodList,
		methodCancel: methodCancel, methodSubscribe: methodSubscribe, methodPushCreate: methodPushCreate,
		methodPushGet: methodPushGet, methodPushList: methodPushList, methodPushDelete: methodPushDelete,
		methodExtendedCard: methodExtendedCard,
	},
	a2atask.Version03: {
		"message/send":                        methodSend,
		"message/stream":                      methodStream,
		"tasks/get":                           methodGet,
		"tasks/cancel":                        methodCancel,
		"tasks/resubscribe":                   methodSubscribe,
		"tasks/pushNotificationConfig/set":    methodPushCreate,
		"tasks/pushNotificationConfig/get":    methodPushGet,
		"tasks/pushNotificationConfig/list":   methodPushList,
		"tasks/pushNotificationConfig/delete": methodPushDelete,
		"agent/getAuthenticatedExtendedCard":  methodExtendedCard,
	},
}

// restMethod names the method of a REST request, from its HTTP method and
// its path below the agent (and below /v1 for 0.3); "" when the path is
// none of the protocol's.
func restMethod(httpMethod, path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "message:send" && httpMethod == http.MethodPost:
		return methodSend
	case len(parts) == 1 && parts[0] == "message:stream" && httpMethod == http.MethodPost:
		return methodStream
	case len(parts) == 1 && (parts[0] == "extendedAgentCard" || parts[0] == "card") && httpMethod == http.MethodGet:
		return methodExtendedCard
	case len(parts) == 1 && parts[0] == "tasks" && httpMethod == http.MethodGet:
		return methodList
	case len(parts) == 2 && parts[0] == "tasks":
		switch {
		case strings.HasSuffix(parts[1], ":subscribe"):
			return methodSubscribe
		case strings.HasSuffix(parts[1], ":cancel") && httpMethod == http.MethodPost:
			return methodCancel
		case httpMethod == http.MethodGet:
			return methodGet
		}
	case len(parts) >= 3 && parts[0] == "tasks" && parts[2] == "pushNotificationConfigs":
		switch {
		case httpMethod == http.MethodPost && len(parts) == 3:
			return methodPushCreate
		case httpMethod == http.MethodGet && len(parts) == 3:
			return methodPushList
		case httpMethod == http.MethodGet && len(parts) == 4:
			return methodPushGet
		case httpMethod == http.MethodDelete && len(parts) == 4:
			return methodPushDelete
		}
	}
	return ""
}

// pathTaskID is the task id of a 0.3 REST path relative to the agent
// (/v1/tasks/{id}/...), or "".
func pathTaskID(rel string) string {
	parts := strings.Split(strings.Trim(strings.TrimPrefix(rel, "/v1"), "/"), "/")
	if len(parts) < 2 || parts[0] != "tasks" {
		return ""
	}
	return parts[1]
}
