package meshapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/a2amesh/a2amesh/schemas"
)

// runtimeRoutesBesideTheTable are the routes a runtime calls that are not
// operations of the table: pairing (before the runtime has a credential),
// its own revocation, its event stream and its attachments' content.
var runtimeRoutesBesideTheTable = map[string]bool{
	"POST /agent-runtimes/runtime/revoke":                        true,
	"GET /agent-runtimes/runtime/events":                         true,
	"GET /agent-runtimes/runtime/artifacts/{artifactId}/content": true,
}

func openAPIOperations(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := schemas.File("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Security []map[string][]string `json:"security"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	ops := map[string][]string{}
	for path, methods := range doc.Paths {
		for method, op := range methods {
			var schemes []string
			for _, s := range op.Security {
				for name := range s {
					schemes = append(schemes, name)
				}
			}
			ops[strings.ToUpper(method)+" "+path] = schemes
		}
	}
	return ops
}

func TestOpenAPI_DocumentsEveryBoundOperation(t *testing.T) {
	documented := openAPIOperations(t)
	for _, op := range meshapi.Ops() {
		if op.REST == nil {
			continue
		}
		schemes, ok := documented[op.REST.Pattern()]
		if !ok {
			t.Errorf("%s (%s) is bound to %s, which schemas/openapi.json does not document", op.Name, op.Service, op.REST.Pattern())
			continue
		}
		if op.Caller == meshapi.CallerRuntime && (len(schemes) != 1 || schemes[0] != "runtime") {
			t.Errorf("%s is a runtime's operation, but schemas/openapi.json documents %s with security %v", op.Name, op.REST.Pattern(), schemes)
		}
	}
}

func TestOpenAPI_DocumentsNoRuntimeRouteTheTableDoesNotBind(t *testing.T) {
	bound := map[string]bool{}
	for _, op := range meshapi.Ops() {
		if op.REST != nil {
			bound[op.REST.Pattern()] = true
		}
	}
	for pattern, schemes := range openAPIOperations(t) {
		runtime := len(schemes) > 0 && schemes[0] == "runtime"
		if runtime && !bound[pattern] && !runtimeRoutesBesideTheTable[pattern] {
			t.Errorf("schemas/openapi.json documents %s for runtimes, but no operation of the table is bound to it", pattern)
		}
	}
}

func TestOps_NamesAndBindingsAreUnique(t *testing.T) {
	names, patterns := map[string]bool{}, map[string]bool{}
	for _, op := range meshapi.Ops() {
		key := string(op.Caller) + " " + op.Service + " " + op.Name
		if names[key] {
			t.Errorf("operation %s is defined twice", key)
		}
		names[key] = true
		if op.Request == nil || op.Response == nil {
			t.Errorf("operation %s has no request or response type", op.Name)
		}
		if op.REST == nil {
			continue
		}
		if patterns[op.REST.Pattern()] {
			t.Errorf("two operations are bound to %s", op.REST.Pattern())
		}
		patterns[op.REST.Pattern()] = true
		for name := range op.REST.Fields {
			if !strings.Contains(op.REST.Path, "{"+name+"}") {
				t.Errorf("%s binds path value %s, which its path has not", op.REST.Pattern(), name)
			}
		}
		switch op.REST.Method {
		case http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete:
		default:
			t.Errorf("%s: unexpected method", op.REST.Pattern())
		}
	}
}

func TestBinding_PathValuesTravelInThePathAndBackIntoTheRequest(t *testing.T) {
	b := meshapi.OpRuntimeDelegateGet.REST
	req := meshapi.DelegateGetRequest{TaskRunID: "run/1", ChildID: "child 2", Wait: 5}
	path, err := b.PathOf(req)
	if err != nil {
		t.Fatal(err)
	}
	if path != "/task-runs/run%2F1/delegation/child%202/get" {
		t.Fatalf("path %q", path)
	}
	values := map[string]string{"taskRunId": "run/1", "childTaskRunId": "child 2"}
	var got meshapi.DelegateGetRequest
	// The path's values win over the body's.
	if err := b.Bind([]byte(`{"task_run_id":"other","wait":5,"unknown":1}`), func(n string) string { return values[n] }, nil, &got); err != nil {
		t.Fatal(err)
	}
	if got != req {
		t.Fatalf("bound %+v, want %+v", got, req)
	}
	if _, err := b.PathOf(meshapi.DelegateGetRequest{TaskRunID: "r"}); err == nil {
		t.Fatal("a request without the child's id made a path")
	}
}

func TestBinding_QueryCarriesStringsAndNumbersBothWays(t *testing.T) {
	b := meshapi.OpTaskRunsList.REST
	req := meshapi.ListTaskRunsRequest{AgentID: "a 1", ConversationID: "c", Status: "pending", Limit: 7, Cursor: "x"}
	path, err := b.PathOf(req)
	if err != nil {
		t.Fatal(err)
	}
	if path != "/task-runs?agent_id=a+1&conversation_id=c&cursor=x&limit=7&status=pending" {
		t.Fatalf("path %q", path)
	}
	if path, _ := b.PathOf(meshapi.ListTaskRunsRequest{}); path != "/task-runs" {
		t.Fatalf("a request with no filter made %q", path)
	}
	_, rawQuery, _ := strings.Cut(path, "?")
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		t.Fatal(err)
	}
	var got meshapi.ListTaskRunsRequest
	if err := b.Bind(nil, func(string) string { return "" }, query, &got); err != nil {
		t.Fatal(err)
	}
	if got != req {
		t.Fatalf("bound %+v, want %+v", got, req)
	}
	if err := b.Bind(nil, func(string) string { return "" }, url.Values{"limit": {""}}, &got); err != nil || got.Limit != req.Limit {
		t.Errorf("an empty limit: %v, limit %d, want it left out", err, got.Limit)
	}
	for _, bad := range []string{"abc", "1.5", "-"} {
		err := b.Bind(nil, func(string) string { return "" }, url.Values{"limit": {bad}}, &got)
		if err == nil || !strings.Contains(err.Error(), "limit") {
			t.Errorf("limit=%q bound with %v, want an error naming limit", bad, err)
		}
	}
}

func TestBinding_QueryCarriesBooleansAndFractions(t *testing.T) {
	type request struct {
		Total bool    `json:"with_total,omitempty"`
		Cost  float64 `json:"cost,omitempty"`
		Name  string  `json:"name,omitempty"`
	}
	b := &meshapi.Binding{Method: http.MethodGet, Path: "/things", Query: map[string]string{"total": "with_total", "cost": "cost", "name": "name"}}
	want := request{Total: true, Cost: 0.25, Name: "true"}
	path, err := b.PathOf(want)
	if err != nil || path != "/things?cost=0.25&name=true&total=true" {
		t.Fatalf("path %q, %v", path, err)
	}
	var got request
	if err := b.Bind(nil, nil, url.Values{"total": {"true"}, "cost": {"0.25"}, "name": {"true"}}, &got); err != nil || got != want {
		t.Fatalf("bound %+v, %v; want %+v", got, err, want)
	}
	for param, bad := range map[string]string{"total": "yes", "cost": "NaN"} {
		if err := b.Bind(nil, nil, url.Values{param: {bad}}, &got); err == nil || !strings.Contains(err.Error(), param) {
			t.Errorf("%s=%s bound with %v, want an error naming %s", param, bad, err, param)
		}
	}
}
