package canon

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gowebpki/jcs"
)

// BenchmarkTransform canonicalizes the whole MCP tool corpus (testdata/tools.txtar) per
// iteration, with this package and with github.com/gowebpki/jcs as the reference, so one
// run gives both throughputs:
//
//	go test -run='^$' -bench=Transform -benchmem ./internal/canon/
func BenchmarkTransform(b *testing.B) {
	docs := toolDocs(b)
	var size int64
	for _, d := range docs {
		size += int64(len(d.json))
	}
	b.Run("canon", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range docs {
				if _, err := Transform(d.json); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("canon.Append", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			for _, d := range docs {
				var err error
				if buf, err = Append(buf[:0], d.json); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("gowebpki", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range docs {
				if _, err := jcs.Transform(d.json); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

func BenchmarkAppendNumber(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	fs := make([]float64, 1024)
	for i := range fs {
		for {
			fs[i] = math.Float64frombits(r.Uint64())
			if !math.IsNaN(fs[i]) && !math.IsInf(fs[i], 0) {
				break
			}
		}
	}
	b.ReportAllocs()
	var buf []byte
	for i := 0; b.Loop(); i++ {
		buf, _ = AppendNumber(buf[:0], fs[i%len(fs)])
	}
}
