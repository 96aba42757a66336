package agentcore

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzHandler: any bytes as an event. The handler never fails the invocation, always
// answers one interceptor output, passes a request only as bytes the event held, and never
// lets a listing through with a tool that is not approved (the fixture is not in shadow
// mode): whatever it cannot read or decide, it denies.
func FuzzHandler(f *testing.F) {
	names, cases := goldenCases(f)
	for _, n := range names {
		f.Add(cases[n])
	}
	f.Add(requestEvent(call("everything___echo")))
	f.Add(responseEvent(listRequest, `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"everything___echo","inputSchema":{}}]}}`, 200))
	fx := newFixture(f, fixtureOpts{})
	f.Fuzz(func(t *testing.T, event []byte) {
		out, err := fx.h.Invoke(t.Context(), event)
		if err != nil {
			t.Fatalf("a Lambda error: %v", err)
		}
		o := decode(t, out)
		if o.MCP.Request != nil {
			if !bytes.Contains(event, o.MCP.Request.Body) {
				t.Fatalf("passed a request body the event did not hold: %s", o.MCP.Request.Body)
			}
			return
		}
		var body struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal(o.MCP.Response.Body, &body) != nil {
			return // null or not an object: nothing listed
		}
		for _, tool := range body.Result.Tools {
			if !contains(fx.approved, tool.Name) {
				t.Fatalf("a listing passed with %q, which is not approved: %s", tool.Name, out)
			}
		}
	})
}
