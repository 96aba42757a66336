package mcpmsg

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	m, err := Parse([]byte(` {"jsonrpc":"2.0","id":"x1","method":"tools/call","params":{"name":"a"}} `))
	if err != nil || !m.IsRequest() || m.Method != "tools/call" || string(m.ID) != `"x1"` || string(m.Params()) != `{"name":"a"}` || m.Result() != nil {
		t.Fatalf("%+v %v", m, err)
	}
	r, err := Parse([]byte(`{"jsonrpc":"2.0","id":7,"result":{"tools":[]},"x":1}`))
	if err != nil || r.HasMethod || string(r.Result()) != `{"tools":[]}` {
		t.Fatalf("%+v %v", r, err)
	}
	if got := string(r.WithResult([]byte(`{"tools":[1]}`))); got != `{"jsonrpc":"2.0","id":7,"result":{"tools":[1]},"x":1}` {
		t.Errorf("WithResult: %s", got)
	}
	before, after := r.AroundResult()
	if string(before)+`{"tools":[]}`+string(after) != string(r.Raw) {
		t.Error("AroundResult does not surround the result")
	}
	if n, err := Parse([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil || n.IsRequest() || !n.HasMethod {
		t.Errorf("notification: %+v %v", n, err)
	}
	for _, bad := range []string{`[]`, `{}`, `{"id":1,"id":2,"result":{}}`, `{"id":1,"result":{},"result":{}}`, `{"method":7,"id":1}`,
		"{\"method\":\"a\xff\",\"id\":1}", `{"method":"\ud800","id":1}`, `{"id":1,"result":{}} x`, `{"id":1,"result":`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSplitBatch(t *testing.T) {
	msgs, batch, err := SplitBatch([]byte(`[{"id":1,"method":"a"} , {"method":"b"}]`))
	if err != nil || !batch || len(msgs) != 2 || string(msgs[1]) != `{"method":"b"}` {
		t.Fatalf("%q %v %v", msgs, batch, err)
	}
	if _, _, err := SplitBatch([]byte(`[]`)); err == nil {
		t.Error("an empty batch accepted")
	}
	if msgs, batch, _ := SplitBatch([]byte(`{"id":1}`)); batch || len(msgs) != 1 {
		t.Error("a single message read as a batch")
	}
}

func TestStringMemberAndTools(t *testing.T) {
	for params, want := range map[string]string{`{"name":"a","arguments":{"name":"b"}}`: "a", `{"name":"a","name":"b"}`: "", `{"name":1}`: "", `[]`: ""} {
		if got, ok := StringMember([]byte(params), "name"); got != want || ok != (want != "") {
			t.Errorf("%s: %q %v", params, got, ok)
		}
	}
	if !HasToolsArray([]byte(`{"nextCursor":"x","tools":[]}`)) || HasToolsArray([]byte(`{"tools":{}}`)) || HasToolsArray([]byte(`{"content":[]}`)) {
		t.Error("HasToolsArray")
	}
}

func TestErrorResponse(t *testing.T) {
	b := ErrorResponse([]byte(`"i"`), -32001, "tool \"x\" </script>\u2028")
	var v struct {
		ID    string
		Error struct {
			Code    int
			Message string
		}
	}
	if err := json.Unmarshal(b, &v); err != nil || v.ID != "i" || v.Error.Code != -32001 || !strings.Contains(v.Error.Message, `tool "x"`) {
		t.Errorf("%s %v", b, err)
	}
	if !strings.Contains(string(ErrorResponse(nil, 1, "m")), `"id":null`) {
		t.Error("a nil id is not null")
	}
}
