// Package blobtest is the conformance suite of the blob.Store port, run by every driver
// (blob.Mem, s3blob) from its own _test.go.
package blobtest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/blob"
)

// Run runs the suite. newStore returns an empty store on each call.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store) {
	t.Run("PutGetList", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		for _, k := range []string{"checkpoints/10.json", "checkpoints/2.json", "other/x"} {
			if err := s.PutIfAbsent(ctx, k, []byte("v:"+k)); err != nil {
				t.Fatalf("PutIfAbsent(%s): %v", k, err)
			}
		}
		got, err := s.Get(ctx, "checkpoints/2.json")
		if err != nil || string(got) != "v:checkpoints/2.json" {
			t.Errorf("Get = %q, %v", got, err)
		}
		keys, err := s.List(ctx, "checkpoints/")
		if want := []string{"checkpoints/10.json", "checkpoints/2.json"}; err != nil || !slices.Equal(keys, want) {
			t.Errorf("List(checkpoints/) = %v, %v; want %v", keys, err, want)
		}
		if keys, err := s.List(ctx, "none/"); err != nil || len(keys) != 0 {
			t.Errorf("List(none/) = %v, %v; want empty", keys, err)
		}
		if _, err := s.Get(ctx, "checkpoints/3.json"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Get(missing) = %v, want ErrNotFound", err)
		}
	})
	t.Run("WriteOnce", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		if err := s.PutIfAbsent(ctx, "k", []byte("one")); err != nil {
			t.Fatal(err)
		}
		if err := s.PutIfAbsent(ctx, "k", []byte("one")); err != nil {
			t.Errorf("the same bytes again (a retried write): %v, want nil", err)
		}
		if err := s.PutIfAbsent(ctx, "k", []byte("two")); !errors.Is(err, blob.ErrConflict) {
			t.Errorf("other bytes under a stored key: %v, want ErrConflict", err)
		}
		if got, _ := s.Get(ctx, "k"); string(got) != "one" {
			t.Errorf("the object became %q", got)
		}
	})
	t.Run("InvalidKeys", func(t *testing.T) {
		s := newStore(t)
		for _, k := range []string{"", "a//b", "../x", "a/./b", "sp ace", "back\\slash", "é"} {
			if err := s.PutIfAbsent(t.Context(), k, []byte("x")); !errors.Is(err, blob.ErrInvalid) {
				t.Errorf("PutIfAbsent(%q) = %v, want ErrInvalid", k, err)
			}
		}
	})
	t.Run("RacingWriters", func(t *testing.T) {
		s := newStore(t)
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.PutIfAbsent(t.Context(), "race", []byte(fmt.Sprint("writer ", i)))
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else if !errors.Is(err, blob.ErrConflict) {
				t.Errorf("loser: %v, want ErrConflict", err)
			}
		}
		if won != 1 {
			t.Errorf("%d of %d racing writers won, want 1", won, n)
		}
	})
}
