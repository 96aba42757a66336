package extmcp

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"testing"
	"time"
)

// listing100 builds a 100-tool tools/list result from server-everything's real tool
// objects (renamed to stay unique) and a source approving 90 of them: the decision drops
// 10 and returns a mutated result.
func listing100(b *testing.B) ([]byte, [][]byte, *memSource) {
	_, tools := everything(b)
	src := newMemSource()
	var raws [][]byte
	var buf bytes.Buffer
	buf.WriteString(`{"tools":[`)
	for i := range 100 {
		base := tools[i%len(tools)]
		name := toolNameOf(b, base)
		raw := bytes.Replace(base, []byte(`"name":"`+name+`"`), []byte(fmt.Sprintf(`"name":"%s-%03d"`, name, i)), 1)
		raws = append(raws, raw)
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(raw)
		dg := liveDigest(b, raw)
		ev := ToolEvidence{Crawled: dg}
		if i%10 != 9 {
			ev.Approved = dg
		}
		src.set("everything", fmt.Sprintf("%s-%03d", name, i), ev)
	}
	buf.WriteString(`],"ttlMs":0,"cacheScope":"private"}`)
	return buf.Bytes(), raws, src
}

func benchProcessor(b *testing.B, src *memSource, cacheBytes int) *Processor {
	p, err := New(Config{Servers: []string{"everything"}, Source: src, DigestCacheBytes: cacheBytes})
	if err != nil {
		b.Fatal(err)
	}
	p.Start(b.Context())
	b.Cleanup(func() { p.Close(b.Context()) })
	return p
}

// BenchmarkListTools100 is the in-process decision for a 100-tool tools/list result
// (about 60 KB): cold (every tool canonicalized and hashed), with the digest cache keyed
// by each tool's raw bytes, and the physical floor — SHA-256 alone over the same tool
// bytes. x_floor reports each variant's cost as a multiple of the floor.
func BenchmarkListTools100(b *testing.B) {
	result, raws, src := listing100(b)
	// The floor measured in place (testing.Benchmark cannot run inside a benchmark): the
	// best of five rounds of 200 listings' worth of SHA-256.
	floorNs := math.Inf(1)
	for range 5 {
		start := time.Now()
		for range 200 {
			for _, r := range raws {
				_ = sha256.Sum256(r)
			}
		}
		floorNs = min(floorNs, float64(time.Since(start).Nanoseconds())/200)
	}
	b.Run("sha256-floor", func(b *testing.B) {
		b.SetBytes(int64(len(result)))
		for b.Loop() {
			for _, r := range raws {
				_ = sha256.Sum256(r)
			}
		}
	})
	for _, tc := range []struct {
		name  string
		cache int
	}{{"cold", -1}, {"digest-cache", DefaultDigestCacheBytes}} {
		b.Run(tc.name, func(b *testing.B) {
			p := benchProcessor(b, src, tc.cache)
			if d := p.ListTools(b.Context(), []string{"everything"}, result); d.Outcome != OutcomeMutated || d.Dropped != 10 {
				b.Fatalf("decision %v dropped %d", d.Outcome, d.Dropped)
			}
			b.SetBytes(int64(len(result)))
			b.ReportAllocs()
			for b.Loop() {
				p.ListTools(b.Context(), []string{"everything"}, result)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/floorNs, "x_floor")
		})
	}
}

// BenchmarkCallTool is the in-process tools/call decision (aim: well under 20 µs).
func BenchmarkCallTool(b *testing.B) {
	result, _, src := listing100(b)
	p := benchProcessor(b, src, DefaultDigestCacheBytes)
	p.ListTools(b.Context(), []string{"everything"}, result)
	params := []byte(`{"name":"echo-000","arguments":{"message":"hello, world"},"_meta":{"progressToken":7}}`)
	if d := p.CallTool(b.Context(), []string{"everything"}, params); d.Outcome != OutcomePass {
		b.Fatalf("call: %s", d.Reason)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.CallTool(b.Context(), []string{"everything"}, params)
	}
}
