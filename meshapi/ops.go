package meshapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// The table of operations: each operation the platform serves is defined
// once, here, with its name, the service that answers it, who may call it,
// its REST binding, its scopes, whether it may be repeated, and its request
// and response types. The bus handler (Op.Handle), the client (Send), the
// gateway's REST bridge, the runtime's transports and the OpenAPI check all
// derive from it (nats.go's jetstream/api.go and Temporal's API definition
// do the same for theirs).
//
// To add an operation:
//
//  1. name it (a runtime operation's name is a token of its subject: add it
//     to the RuntimeOp constants in bus/names.go);
//  2. define it below with define, giving its request and response types
//     and, when people or runtimes call it over HTTP, its REST binding;
//  3. answer it in its service with op.Handle(handler) among the service's
//     Endpoints;
//  4. give RuntimeClient a one-line method over Send when callers in Go
//     want one, and document its REST binding in schemas/openapi.json
//     (TestOpenAPI_DocumentsEveryBoundOperation fails until it is).
//
// An operation with a REST binding and no Custom flag is served by the
// gateway's generic bridge, and spoken by the runtime's HTTP transport, with
// no more code.

// Caller says who may call an operation.
type Caller string

const (
	// CallerRuntime is the runtime of the agent: on its own subjects over
	// NATS (bus.RuntimeSubject), or with its X-Runtime-Token over HTTP.
	CallerRuntime Caller = "runtime"
	// CallerOwner is a person with the owner credential.
	CallerOwner Caller = "owner"
	// CallerA2A is an A2A caller of an agent (its API key or bearer JWT).
	CallerA2A Caller = "a2a"
	// CallerConsumer is an event consumer with its own credential.
	CallerConsumer Caller = "consumer"
	// CallerPlatform is a platform service or front end only.
	CallerPlatform Caller = "platform"
	// CallerPairing is a runtime being paired: the pairing code in its
	// request is its only credential, so its route is open.
	CallerPairing Caller = "pairing"
)

// Binding is an operation's REST route. Path is a net/http ServeMux
// pattern's path; each of its path values is bound to the request's JSON
// field Fields names (the rest of the request is the body).
type Binding struct {
	Method string
	Path   string
	// Fields maps each path value's name to the request's JSON field.
	Fields map[string]string
	// Query maps each query parameter's name to the request's JSON field
	// (a string, a number or a boolean): a list's filters and page.
	Query map[string]string
	// Status is the HTTP status of a success. Default 200; 204 answers
	// with no body.
	Status int
	// NoStore: the answer carries a secret shown this once (a signing
	// secret, a credential, a code), which no cache may keep
	// (Cache-Control: no-store).
	NoStore bool
	// Custom marks a route whose gateway handler does more than forward
	// (a long poll, a body of seed 001's shape, an answer of another
	// shape): the gateway writes it by hand, the rest derive from the
	// table.
	Custom bool
}

// Pattern is the binding's ServeMux pattern ("POST /task-runs/{taskRunId}/complete").
func (b *Binding) Pattern() string { return b.Method + " " + b.Path }

// PathOf fills the binding's path values from the request: each from its
// JSON field (a string), escaped; and its query from the fields Query names
// that are set (not empty, zero or false).
func (b *Binding) PathOf(req any) (string, error) {
	fields, err := jsonFields(req)
	if err != nil {
		return "", err
	}
	path := b.Path
	for name, field := range b.Fields {
		var v string
		if raw, ok := fields[field]; !ok || json.Unmarshal(raw, &v) != nil || v == "" {
			return "", fmt.Errorf("%s: the request has no %s", b.Pattern(), field)
		}
		path = strings.Replace(path, "{"+name+"}", url.PathEscape(v), 1)
	}
	query := url.Values{}
	for name, field := range b.Query {
		if v := queryText(fields[field]); v != "" {
			query.Set(name, v)
		}
	}
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	return path, nil
}

// Bind decodes body (a JSON object, or nothing) into req, with the path
// values given by value taking their fields (and the query's given by
// query, when it is not nil: only those present); the body is read leniently
// (unknown fields are ignored), so clients of other versions keep working.
func (b *Binding) Bind(body []byte, value func(name string) string, query url.Values, req any) error {
	fields := map[string]json.RawMessage{}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &fields); err != nil {
			return fmt.Errorf("the body must be a JSON object: %w", err)
		}
	}
	for name, field := range b.Fields {
		v, _ := json.Marshal(value(name))
		fields[field] = v
	}
	for name, field := range b.Query {
		if query.Has(name) {
			v, err := queryField(req, name, field, query.Get(name))
			if err != nil {
				return err
			}
			if v != nil {
				fields[field] = v
			}
		}
	}
	merged, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	return json.Unmarshal(merged, req)
}

// queryText is a request field's value as a query parameter: a string as
// it is, a number or true as written in JSON; "" for a field that is not
// set (absent, empty, zero or false).
func queryText(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	switch v := v.(type) {
	case string:
		return v
	case float64:
		if v != 0 {
			return strings.TrimSpace(string(raw))
		}
	case bool:
		if v {
			return "true"
		}
	}
	return ""
}

// queryField is query parameter name's value v as the JSON of req's field
// (a pointer to a struct): a number for a number field, true or false for a
// boolean (nil when v is empty: the parameter is left out), a string
// otherwise.
func queryField(req any, name, field, v string) (json.RawMessage, error) {
	kind := kindOf(reflect.TypeOf(req), field)
	if v == "" && kind != reflect.String {
		return nil, nil
	}
	switch kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s must be a whole number", name)
		}
		return json.RawMessage(strconv.FormatInt(n, 10)), nil
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%s must be a number", name)
		}
		return json.Marshal(f)
	case reflect.Bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s must be true or false", name)
		}
		return json.RawMessage(strconv.FormatBool(b)), nil
	}
	return json.Marshal(v)
}

// kindOf is the kind of the field of struct t (or of what t points to)
// whose JSON name is field; reflect.Invalid when it has none.
func kindOf(t reflect.Type, field string) reflect.Kind {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return reflect.Invalid
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == field {
			return f.Type.Kind()
		}
	}
	return reflect.Invalid
}

func jsonFields(v any) (map[string]json.RawMessage, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	if string(data) == "null" {
		return fields, nil
	}
	return fields, json.Unmarshal(data, &fields)
}

// OpInfo is one row of the table.
type OpInfo struct {
	// Name is the operation's name: its subject's last token.
	Name string
	// Service is the service that answers it (a bus.Service constant).
	Service string
	// Caller is who may call it.
	Caller Caller
	// REST is its HTTP route; nil: it is spoken on the bus only.
	REST *Binding
	// Scopes are the credential scopes a caller needs, beyond being Caller.
	Scopes []string
	// Idempotent: a repeat of the same request has the same effect.
	Idempotent bool
	// Resend: a try whose answer did not come is sent again until the
	// caller's context ends (bus.CallIdempotent): a claim or a renewal
	// whose answer was lost would otherwise leave a run held for nobody.
	Resend bool
	// Waits: it may wait long for something to happen (a long poll); it
	// is not counted against its service's bound on work in flight.
	Waits bool
	// Request and Response are its request and response types.
	Request, Response reflect.Type
}

// Op is an operation of the table with its request and response types.
type Op[Req, Resp any] struct{ *OpInfo }

var table []*OpInfo

// define adds an operation to the table.
func define[Req, Resp any](info OpInfo) Op[Req, Resp] {
	info.Request, info.Response = reflect.TypeFor[Req](), reflect.TypeFor[Resp]()
	table = append(table, &info)
	return Op[Req, Resp]{&info}
}

// Ops returns the table, in the order the operations are defined.
func Ops() []*OpInfo { return append([]*OpInfo(nil), table...) }

// Empty is the request or answer of an operation that carries nothing.
type Empty struct{}

// Handle returns h as the bus endpoint of op: bus decodes each request
// into a Req (answering INVALID_REQUEST on malformed input) and maps h's
// error to the bus error, once for every operation.
func (op Op[Req, Resp]) Handle(h func(context.Context, *Req) (*Resp, error)) bus.Endpoint {
	return bus.Endpoint{Name: op.Name, Runtime: op.Caller == CallerRuntime, Waits: op.Waits, Handler: bus.Typed(h)}
}

// Sender sends operations of the table: over the bus (a RuntimeClient) or
// over the REST API (the runtime's HTTP transport).
type Sender interface {
	Call(ctx context.Context, op *OpInfo, req, resp any) error
}

// Send sends op with req through c and returns its answer.
func Send[Req, Resp any](ctx context.Context, c Sender, op Op[Req, Resp], req Req) (*Resp, error) {
	var resp Resp
	if err := c.Call(ctx, op.OpInfo, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Call sends a service's operation on its service subject.
func (c *Client) Call(ctx context.Context, op *OpInfo, req, resp any) error {
	subject := bus.ServiceSubject(op.Service, op.Name)
	if op.Resend {
		return bus.CallIdempotent(ctx, c.nc, subject, req, resp, TryTimeout)
	}
	return bus.Call(ctx, c.nc, subject, req, resp)
}

// Call sends a runtime operation on the runtime's own subject.
func (c *RuntimeClient) Call(ctx context.Context, op *OpInfo, req, resp any) error {
	subject := bus.RuntimeSubject(c.agentID, c.runtimeID, op.Name)
	if op.Caller != CallerRuntime {
		subject = bus.ServiceSubject(op.Service, op.Name)
	}
	if op.Resend {
		return bus.CallIdempotent(ctx, c.nc, subject, req, resp, TryTimeout)
	}
	return bus.Call(ctx, c.nc, subject, req, resp)
}

func post(path string, fields map[string]string) *Binding {
	return &Binding{Method: http.MethodPost, Path: path, Fields: fields}
}

func route(method, path string, status int, fields map[string]string) *Binding {
	return &Binding{Method: method, Path: path, Status: status, Fields: fields}
}

func get(path string, fields map[string]string) *Binding {
	return &Binding{Method: http.MethodGet, Path: path, Fields: fields}
}

func custom(b *Binding) *Binding { b.Custom = true; return b }

func noStore(b *Binding) *Binding { b.NoStore = true; return b }

func query(b *Binding, fields map[string]string) *Binding { b.Query = fields; return b }

// onRun binds {taskRunId} to the request's task_run_id.
var onRun = map[string]string{"taskRunId": "task_run_id"}

// onChild binds {taskRunId} and {childTaskRunId}.
var onChild = map[string]string{"taskRunId": "task_run_id", "childTaskRunId": "child_task_run_id"}

// The runtime's operations (seed 001 §4 and the delegation from inside a
// run). The task queue answers the runs' lifecycle, the registry presence,
// the credentials service where to connect, the delegation service the
// delegation tools, the artifacts service artifact writes.
var (
	OpRuntimeHello = define[Empty, HelloResponse](OpInfo{Name: bus.RuntimeOpHello, Service: bus.ServiceTaskQueue, Caller: CallerRuntime, Idempotent: true,
		REST: post("/agent-runtimes/runtime/hello", nil)})
	OpRuntimeConnection = define[Empty, NATSConnection](OpInfo{Name: bus.RuntimeOpConnection, Service: bus.ServiceCredentials, Caller: CallerRuntime, Idempotent: true,
		REST: post("/agent-runtimes/runtime/connection", nil)})
	// The heartbeat's route takes seed 001's body (its agent_id is checked).
	OpRuntimeHeartbeat = define[HeartbeatRequest, HeartbeatResponse](OpInfo{Name: bus.RuntimeOpHeartbeat, Service: bus.ServiceRegistry, Caller: CallerRuntime, Idempotent: true,
		REST: custom(post("/agent-runtimes/runtime/heartbeat", nil))})
	OpRuntimeGoodbye = define[Empty, Empty](OpInfo{Name: bus.RuntimeOpGoodbye, Service: bus.ServiceRegistry, Caller: CallerRuntime, Idempotent: true,
		REST: post("/agent-runtimes/runtime/goodbye", nil)})
	// The REST pull waits as ?wait= says, answers 204 when nothing came, and
	// gives back a run claimed for a runtime that left meanwhile.
	OpRuntimePull = define[PullRequest, PullResponse](OpInfo{Name: bus.RuntimeOpPull, Service: bus.ServiceTaskQueue, Caller: CallerRuntime, Waits: true,
		REST: custom(post("/agent-accounts/{agentId}/task-runs/pull", map[string]string{"agentId": "agent_id"}))})
	OpRuntimeOffer = define[OfferRequest, OfferResponse](OpInfo{Name: bus.RuntimeOpOffer, Service: bus.ServiceTaskQueue, Caller: CallerRuntime, Waits: true})
	OpRuntimeClaim = define[ClaimRequest, TaskRunReply](OpInfo{Name: bus.RuntimeOpClaim, Service: bus.ServiceTaskQueue, Caller: CallerRuntime,
		Idempotent: true, Resend: true})
	OpRuntimeClaimMany = define[ClaimManyRequest, ClaimManyResponse](OpInfo{Name: bus.RuntimeOpClaimMany, Service: bus.ServiceTaskQueue, Caller: CallerRuntime,
		Idempotent: true, Resend: true})
	// The REST release answers 204.
	OpRuntimeRelease = define[ReleaseRequest, TaskRunReply](OpInfo{Name: bus.RuntimeOpRelease, Service: bus.ServiceTaskQueue, Caller: CallerRuntime, Idempotent: true,
		REST: custom(post("/task-runs/{taskRunId}/release", onRun))})
	// The REST renewal renews one run and says why it was not.
	OpRuntimeRenew = define[RenewRequest, RenewResponse](OpInfo{Name: bus.RuntimeOpRenew, Service: bus.ServiceTaskQueue, Caller: CallerRuntime,
		Idempotent: true, Resend: true, REST: custom(post("/task-runs/{taskRunId}/renew", onRun))})
	OpRuntimeCanceled = define[CanceledRequest, CanceledResponse](OpInfo{Name: bus.RuntimeOpCanceled, Service: bus.ServiceTaskQueue, Caller: CallerRuntime, Waits: true})
	OpRuntimeProgress = define[ProgressRequest, ReportAck](OpInfo{Name: bus.RuntimeOpProgress, Service: bus.ServiceTaskQueue, Caller: CallerRuntime,
		REST: post("/task-runs/{taskRunId}/progress", onRun)})
	OpRuntimeComplete = define[CompleteRequest, ReportAck](OpInfo{Name: bus.RuntimeOpComplete, Service: bus.ServiceTaskQueue, Caller: CallerRuntime, Idempotent: true,
		REST: post("/task-runs/{taskRunId}/complete", onRun)})
	OpRuntimeFail = define[FailRequest, ReportAck](OpInfo{Name: bus.RuntimeOpFail, Service: bus.ServiceTaskQueue, Caller: CallerRuntime, Idempotent: true,
		REST: post("/task-runs/{taskRunId}/fail", onRun)})
	// Over HTTP an artifact's open and content are one upload.
	OpRuntimeArtifactOpen = define[OpenArtifactRequest, OpenArtifactResponse](OpInfo{Name: bus.RuntimeOpArtifactOpen, Service: bus.ServiceArtifacts, Caller: CallerRuntime,
		REST: custom(query(post("/task-runs/{taskRunId}/artifacts", onRun), map[string]string{"write_key": "write_key"}))})
	OpRuntimeDelegateAgents = define[DelegateAgentsRequest, DelegateAgentList](OpInfo{Name: bus.RuntimeOpDelegateAgents, Service: bus.ServiceDelegation, Caller: CallerRuntime, Idempotent: true,
		REST: post("/task-runs/{taskRunId}/delegation/agents", onRun)})
	OpRuntimeDelegateSend = define[DelegateSendRequest, DelegateSendResponse](OpInfo{Name: bus.RuntimeOpDelegateSend, Service: bus.ServiceDelegation, Caller: CallerRuntime, Idempotent: true,
		REST: post("/task-runs/{taskRunId}/delegation/send", onRun)})
	OpRuntimeDelegateGet = define[DelegateGetRequest, DelegatedTask](OpInfo{Name: bus.RuntimeOpDelegateGet, Service: bus.ServiceDelegation, Caller: CallerRuntime, Idempotent: true, Waits: true,
		REST: post("/task-runs/{taskRunId}/delegation/{childTaskRunId}/get", onChild)})
	OpRuntimeDelegateArtifact = define[DelegateArtifactRequest, DelegateArtifactResponse](OpInfo{Name: bus.RuntimeOpDelegateArtifact, Service: bus.ServiceDelegation, Caller: CallerRuntime, Idempotent: true,
		REST: post("/task-runs/{taskRunId}/delegation/{childTaskRunId}/artifact", onChild)})
	OpRuntimeDelegateCancel = define[DelegateCancelRequest, DelegatedTask](OpInfo{Name: bus.RuntimeOpDelegateCancel, Service: bus.ServiceDelegation, Caller: CallerRuntime, Idempotent: true,
		REST: post("/task-runs/{taskRunId}/delegation/{childTaskRunId}/cancel", onChild)})
)

// The registry's operations for people and services.
var (
	// The REST route first checks that the agent exists (404 otherwise).
	OpRegistryListRuntimes = define[ListRuntimesRequest, RuntimeList](OpInfo{Name: OpRegistryList, Service: bus.ServiceRegistry, Caller: CallerOwner, Idempotent: true,
		REST: custom(get("/agent-accounts/{agentId}/runtimes", map[string]string{"agentId": "agent_id"}))})
)

// onAgent binds {agentId} to the request's agent_id.
var onAgent = map[string]string{"agentId": "agent_id"}

// The agents service's operations: agent accounts, for their owner.
var (
	OpAgentsCreate = define[CreateAgentRequest, mesh.Agent](OpInfo{Name: OpAgentCreate, Service: bus.ServiceAgents, Caller: CallerOwner,
		REST: route(http.MethodPost, "/agent-accounts", http.StatusCreated, nil)})
	OpAgentsList = define[ListAgentsRequest, AgentList](OpInfo{Name: OpAgentList, Service: bus.ServiceAgents, Caller: CallerOwner, Idempotent: true,
		REST: get("/agent-accounts", nil)})
	OpAgentsGet = define[GetAgentRequest, mesh.Agent](OpInfo{Name: OpAgentGet, Service: bus.ServiceAgents, Caller: CallerOwner, Idempotent: true,
		REST: get("/agent-accounts/{agentId}", onAgent)})
	OpAgentsUpdate = define[UpdateAgentRequest, mesh.Agent](OpInfo{Name: OpAgentUpdate, Service: bus.ServiceAgents, Caller: CallerOwner, Idempotent: true,
		REST: route(http.MethodPatch, "/agent-accounts/{agentId}", http.StatusOK, onAgent)})
	// Deleting revokes the agent's runtimes and cancels its open runs; its
	// history is kept.
	OpAgentsDelete = define[DeleteAgentRequest, DeleteAgentResponse](OpInfo{Name: OpAgentDelete, Service: bus.ServiceAgents, Caller: CallerOwner, Idempotent: true,
		REST: route(http.MethodDelete, "/agent-accounts/{agentId}", http.StatusOK, onAgent)})
)

// onConversation binds {conversationId} to the request's conversation_id.
var onConversation = map[string]string{"conversationId": "conversation_id"}

// The task queue's operations on runs and conversations, for people (and
// the platform's own doors, which create runs the same way). An answer that
// wraps a run (TaskRunReply) is the run itself over REST.
var (
	// The REST create also takes the Idempotency-Key header and seals the
	// caller's environment variables for the agent's runtime.
	OpTaskRunsCreate = define[CreateTaskRunRequest, CreateTaskRunResponse](OpInfo{Name: OpTaskCreate, Service: bus.ServiceTaskQueue, Caller: CallerOwner,
		REST: custom(route(http.MethodPost, "/task-runs", http.StatusCreated, nil))})
	OpTaskRunsGet = define[GetTaskRunRequest, TaskRunReply](OpInfo{Name: OpTaskGet, Service: bus.ServiceTaskQueue, Caller: CallerOwner, Idempotent: true,
		REST: get("/task-runs/{taskRunId}", onRun)})
	// The REST list takes its filters and page from the query.
	OpTaskRunsList = define[ListTaskRunsRequest, TaskRunList](OpInfo{Name: OpTaskList, Service: bus.ServiceTaskQueue, Caller: CallerOwner, Idempotent: true,
		REST: query(get("/task-runs", nil), map[string]string{"agent_id": "agent_id", "conversation_id": "conversation_id", "status": "status", "limit": "limit", "cursor": "cursor"})})
	OpTaskRunsCancel = define[CancelTaskRunRequest, TaskRunReply](OpInfo{Name: OpTaskCancel, Service: bus.ServiceTaskQueue, Caller: CallerOwner, Idempotent: true,
		REST: post("/task-runs/{taskRunId}/cancel", onRun)})
	// The REST answer takes the answer as text or as a whole input.
	OpTaskRunsContinue = define[ContinueTaskRunRequest, TaskRunReply](OpInfo{Name: OpTaskContinue, Service: bus.ServiceTaskQueue, Caller: CallerOwner,
		REST: custom(post("/task-runs/{taskRunId}/input", onRun))})
	// The artifacts service records an artifact it stored on its run.
	OpTaskRunsAttachArtifact = define[AttachArtifactRequest, TaskRunReply](OpInfo{Name: OpTaskAttachArtifact, Service: bus.ServiceTaskQueue, Caller: CallerPlatform, Idempotent: true})
	OpConversationsCreate    = define[CreateConversationRequest, mesh.Conversation](OpInfo{Name: OpConversationCreate, Service: bus.ServiceTaskQueue, Caller: CallerOwner,
		REST: route(http.MethodPost, "/conversations", http.StatusCreated, nil)})
	OpConversationsGet = define[GetConversationRequest, mesh.Conversation](OpInfo{Name: OpConversationGet, Service: bus.ServiceTaskQueue, Caller: CallerOwner, Idempotent: true,
		REST: get("/conversations/{conversationId}", onConversation)})
)
