package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/signer"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

var (
	benchOnce sync.Once
	benchRecs []warrant.AuditRecord
	benchKey  *memSigner
)

// BenchmarkVerify100k verifies a 100,000-entry chain and reports entries/s, and the
// ratio of the whole verification to its physical floor: raw SHA-256 over the same
// bytes plus one signature check per entry, both measured here.
//
//	go test -run '^$' -bench Verify100k -benchtime 3x ./internal/audit/
func BenchmarkVerify100k(b *testing.B) {
	benchOnce.Do(func() {
		benchKey = newMemSigner(b)
		benchRecs = build(b, benchKey, 100_000)
	})
	ks := keys(benchKey)
	// The floor, measured once: SHA-256(prev || body) and one ECDSA verification per entry.
	t0 := time.Now()
	for _, r := range benchRecs {
		prev, _ := hex.DecodeString(r.PrevHash)
		h := sha256.New()
		h.Write(prev)
		h.Write(r.Body)
		h.Sum(nil)
	}
	shaFloor := time.Since(t0)
	t0 = time.Now()
	for _, r := range benchRecs {
		raw, _ := hex.DecodeString(r.Hash)
		_ = signer.Verify(benchKey.Public(), raw, r.Signature)
	}
	sigFloor := time.Since(t0)

	var total time.Duration
	var hashing time.Duration
	b.ResetTimer()
	for b.Loop() {
		t1 := time.Now()
		rep := Verify(benchRecs, Options{Keys: ks})
		total += time.Since(t1)
		if !rep.OK() {
			b.Fatal(rep.Problems[0])
		}
		// The hashing part of Verify alone (canonical check + Hash), for the ratio to raw SHA-256.
		t2 := time.Now()
		for _, r := range benchRecs {
			_, _ = Hash(r.PrevHash, r.Body)
		}
		hashing += time.Since(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(len(benchRecs))*n/total.Seconds(), "entries/s")
	b.ReportMetric(hashing.Seconds()/n/shaFloor.Seconds(), "hash/raw-sha256")
	b.ReportMetric(total.Seconds()/n/(shaFloor+sigFloor).Seconds(), "verify/floor")
}
