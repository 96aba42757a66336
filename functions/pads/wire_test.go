package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/padwire"
)

// TestBinaryBlocks: the binary /blocks form through the Lambda proxy behind an HTTP API.
// No binaryMediaTypes setting exists or is needed there: a body that is not valid UTF-8
// leaves the function base64-encoded with isBase64Encoded, which API Gateway decodes, so a
// client receives the bytes the handler wrote; they carry the same blocks as the JSON form.
func TestBinaryBlocks(t *testing.T) {
	h := newStack(t).handler(t)
	p := create(t, h)
	payloads := [][]byte{[]byte(envelope), {0xff, 0xfe, 0x00, 'x'}, []byte("text\n")}
	for i, b := range payloads {
		want(t, "append", appendBlock(t, h, p, b, i == 1), 201, nil)
	}
	blocks := readAll(t, h, p)

	ev := forPad(loadEvent(t, "blocks.json"), p.id, "Bearer "+p.ticket)
	ev.RawQueryString, ev.QueryStringParameters = "", nil
	ev.Headers["accept"] = padwire.MediaType
	resp, err := h(t.Context(), ev)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("binary read: %d %v", resp.StatusCode, err)
	}
	if resp.Headers["Content-Type"] != padwire.MediaType || !resp.IsBase64Encoded {
		t.Fatalf("headers %v, base64 %v: want the binary media type, base64-encoded for API Gateway", resp.Headers, resp.IsBase64Encoded)
	}
	body, err := base64.StdEncoding.DecodeString(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	rd := padwire.NewReader(bytes.NewReader(body), bufio.NewReader(nil))
	hd, err := rd.Header()
	if err != nil || hd.PadID != p.id || hd.Count != 3 || hd.TotalBlocks != 3 || hd.To != 2 {
		t.Fatalf("header %+v: %v", hd, err)
	}
	for i := range payloads {
		f, ok, err := rd.Next()
		if err != nil || !ok {
			t.Fatalf("frame %d: %v", i, err)
		}
		got := make([]byte, f.PayloadLen)
		if err := rd.Payload(got, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, payloads[i]) || string(f.CurrHash) != blocks[i]["curr_hash"] || string(f.PrevHash) != blocks[i]["prev_hash"] {
			t.Fatalf("frame %d differs from the JSON block %v", i, blocks[i])
		}
	}
	if _, ok, err := rd.Next(); ok || err != nil || rd.End() != nil {
		t.Fatalf("no end mark where expected: %v", err)
	}
}
