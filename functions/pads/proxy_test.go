package main

import (
	"bytes"
	"runtime"
	"testing"
)

// TestLargeBodyNotMaterialised: a body API Gateway can deliver (under Lambda's 6 MB event
// limit) but far over the contract's cap is answered 413 without being decoded or copied:
// the handler function allocates a small fraction of the body. (httpadapter decoded or
// copied the whole body before the handler could refuse it.) The figure is bytes
// allocated, not time.
func TestLargeBodyNotMaterialised(t *testing.T) {
	h := newStack(t).handler(t)
	big := bytes.Repeat([]byte{0x80}, 3<<20) // 3 MiB; 4 MiB once base64-encoded
	for _, b64 := range []bool{true, false} {
		ev := withBody(forPad(loadEvent(t, "append.json"), "no-such-pad", "Bearer k"), big, b64)
		least := ^uint64(0)
		for range 3 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			resp, err := h(t.Context(), ev)
			runtime.ReadMemStats(&after)
			if err != nil || resp.StatusCode != 413 {
				t.Fatalf("3 MiB append (base64 %v): %d %s %v", b64, resp.StatusCode, resp.Body, err)
			}
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		if least > 512<<10 {
			t.Errorf("3 MiB append (base64 %v): the handler function allocated %d KiB to refuse it; want under 512 KiB", b64, least>>10)
		}
	}
}
