package enforce

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/benchratio"
)

// listingN builds an n-tool tools/list result from server-everything's real tool objects
// (renamed to stay unique) and a source approving nine in ten of them: the decision drops
// every tenth and returns a mutated result.
func listingN(b testing.TB, n int) ([]byte, *memSource) {
	_, tools := everything(b)
	src := newMemSource()
	var buf bytes.Buffer
	buf.WriteString(`{"tools":[`)
	for i := range n {
		base := tools[i%len(tools)]
		name := toolNameOf(b, base)
		raw := bytes.Replace(base, []byte(`"name":"`+name+`"`), []byte(fmt.Sprintf(`"name":"%s-%04d"`, name, i)), 1)
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(raw)
		dg := liveDigest(b, raw)
		ev := ToolEvidence{Crawled: dg}
		if i%10 != 9 {
			ev.Approved = dg
		}
		src.set("everything", fmt.Sprintf("%s-%04d", name, i), ev)
	}
	buf.WriteString(`],"ttlMs":0,"cacheScope":"private"}`)
	return buf.Bytes(), src
}

func benchProcessor(b *testing.B, src *memSource, mod func(*Config)) *Processor {
	// Decision records on, as served: a repeat listing then also counts on its shape.
	cfg := Config{Servers: []string{"everything"}, Source: src,
		Decisions: DecisionRecorderFunc(func(context.Context, DecisionBatch) error { return nil })}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	p.Start(b.Context())
	b.Cleanup(func() { p.Close(b.Context()) })
	return p
}

// BenchmarkListTools is the in-process tools/list decision at 10, 100 and 1000 tools
// (about 6 KB, 58 KB and 580 KB), each against its physical floor, SHA-256 of the same
// result bytes, in alternating rounds of the same run (x_sha256 = decision time / hash
// time):
//
//   - warm: a repeat listing, answered by the decision memo (one hash, one compare);
//
//   - digest-cache: the memo off, every tool's digest found by its raw bytes (the first
//     listing after an approval changes, or a listing that differs in any byte);
//
//   - cold: no caches, every tool canonicalized (RFC 8785) and hashed.
//
//     go test -run='^$' -bench=ListTools ./internal/enforce/
func BenchmarkListTools(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		result, src := listingN(b, n)
		for _, tc := range []struct {
			name string
			mod  func(*Config)
		}{
			{"warm", nil},
			{"digest-cache", func(c *Config) { c.ListingMemoBytes = -1 }},
			{"cold", func(c *Config) { c.ListingMemoBytes, c.DigestCacheBytes = -1, -1 }},
		} {
			b.Run(fmt.Sprintf("%d/%s", n, tc.name), func(b *testing.B) {
				p := benchProcessor(b, src, tc.mod)
				svc := []string{"everything"}
				if d := p.ListTools(b.Context(), svc, result); d.Outcome != OutcomeMutated || d.Dropped != n/10 {
					b.Fatalf("decision %v dropped %d", d.Outcome, d.Dropped)
				}
				decide := func() { p.ListTools(b.Context(), svc, result) }
				hash := func() { _ = sha256.Sum256(result) }
				b.SetBytes(int64(len(result)))
				b.ReportAllocs()
				for b.Loop() {
					decide()
				}
				benchratio.Report(b, benchratio.Compare(0, 0, hash, decide), "x_sha256", false, int64(len(result)))
			})
		}
	}
}

// BenchmarkCallTool is the in-process tools/call decision (aim: well under 20 µs).
//
//	go test -run='^$' -bench=CallTool ./internal/enforce/
func BenchmarkCallTool(b *testing.B) {
	result, src := listingN(b, 100)
	p := benchProcessor(b, src, nil)
	p.ListTools(b.Context(), []string{"everything"}, result)
	params := []byte(`{"name":"echo-0000","arguments":{"message":"hello, world"},"_meta":{"progressToken":7}}`)
	if d := p.CallTool(b.Context(), []string{"everything"}, params); d.Outcome != OutcomePass {
		b.Fatalf("call: %s", d.Reason)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.CallTool(b.Context(), []string{"everything"}, params)
	}
}
