package signertest

import (
	"crypto/sha256"
	"errors"
	"sync"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/signer"
)

// Run runs the suite. newSigner returns a signer for a fresh key on each call.
func Run(t *testing.T, newSigner func(t *testing.T) signer.Signer) {
	t.Run("SignVerify", func(t *testing.T) {
		s := newSigner(t)
		h := sha256.Sum256([]byte("entry"))
		sig, err := s.Sign(t.Context(), h[:])
		if err != nil {
			t.Fatal(err)
		}
		if err := signer.Verify(s.Public(), h[:], sig); err != nil {
			t.Errorf("own signature: %v", err)
		}
		other := sha256.Sum256([]byte("other entry"))
		if err := signer.Verify(s.Public(), other[:], sig); !errors.Is(err, signer.ErrBadSignature) {
			t.Errorf("signature over another hash: %v", err)
		}
		bad := append([]byte(nil), sig...)
		bad[len(bad)/2] ^= 1
		if err := signer.Verify(s.Public(), h[:], bad); err == nil {
			t.Error("a corrupted signature verified")
		}
	})
	t.Run("KeyID", func(t *testing.T) {
		s := newSigner(t)
		id, err := signer.KeyIDOf(s.Public())
		if err != nil || id != s.KeyID() || len(id) != len("sha256:")+64 {
			t.Errorf("KeyID() = %q, KeyIDOf(Public()) = %q, %v", s.KeyID(), id, err)
		}
		if s2 := newSigner(t); s2.KeyID() == s.KeyID() {
			t.Error("two fresh keys have the same key ID")
		}
	})
	t.Run("RejectsWrongKey", func(t *testing.T) {
		a, b := newSigner(t), newSigner(t)
		h := sha256.Sum256([]byte("entry"))
		sig, err := a.Sign(t.Context(), h[:])
		if err != nil {
			t.Fatal(err)
		}
		if err := signer.Verify(b.Public(), h[:], sig); !errors.Is(err, signer.ErrBadSignature) {
			t.Errorf("verified under another key: %v", err)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		s := newSigner(t)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := sha256.Sum256([]byte{byte(i)})
				sig, err := s.Sign(t.Context(), h[:])
				if err != nil || signer.Verify(s.Public(), h[:], sig) != nil {
					t.Errorf("concurrent sign %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
	})
}
