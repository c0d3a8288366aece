package meshapi_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/meshapi"
)

// FuzzBinding_BindQuery: the gateway's bridge binds a request from a
// caller's query and body. Whatever they hold, Bind returns an error or a
// request, never panics; and a request bound from a query alone, sent on
// by PathOf and bound again, is the same request.
func FuzzBinding_BindQuery(f *testing.F) {
	f.Add("agent_id=a&status=pending&limit=5&cursor=c", `{}`)
	f.Add("limit=abc", ``)
	f.Add("limit=&conversation_id=%ff", `{"limit":3}`)
	f.Add("limit=-1&limit=2", `{"offset":7,"with_total":true}`)
	f.Add("limit=99999999999999999999", `[1]`)
	f.Fuzz(func(t *testing.T, rawQuery, body string) {
		b := meshapi.OpTaskRunsList.REST
		query, err := url.ParseQuery(rawQuery)
		if err != nil {
			return
		}
		none := func(string) string { return "" }
		var req meshapi.ListTaskRunsRequest
		_ = b.Bind([]byte(body), none, query, &req)

		var got meshapi.ListTaskRunsRequest
		if b.Bind(nil, none, query, &got) != nil {
			return
		}
		path, err := b.PathOf(got)
		if err != nil {
			t.Fatalf("PathOf(%+v): %v", got, err)
		}
		_, again, _ := strings.Cut(path, "?")
		q, err := url.ParseQuery(again)
		if err != nil {
			t.Fatalf("PathOf made a query that does not parse: %q", path)
		}
		var back meshapi.ListTaskRunsRequest
		if err := b.Bind(nil, none, q, &back); err != nil || back != got {
			t.Fatalf("bound %+v from %q, sent as %q, bound again %+v (%v)", got, rawQuery, path, back, err)
		}
	})
}
