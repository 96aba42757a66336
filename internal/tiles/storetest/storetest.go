// Package storetest is the conformance suite of the tiles.Store port, run by every driver
// (tiles.Dir, s3tiles) from its own _test.go.
package storetest

import (
	"errors"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/tiles"
)

// Run runs the suite. newStore returns an empty store on each call.
func Run(t *testing.T, newStore func(t *testing.T) tiles.Store) {
	t.Run("WriteOnce", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		for _, tc := range []struct {
			name string
			kind tiles.Kind
		}{{"tile/0/000", tiles.Full}, {"tile/0/x001/002.p/7", tiles.Partial}, {"tile/entries/000", tiles.Full}} {
			if err := s.Put(ctx, tc.name, []byte("one"), tc.kind); err != nil {
				t.Fatalf("Put(%s): %v", tc.name, err)
			}
			if err := s.Put(ctx, tc.name, []byte("one"), tc.kind); err != nil {
				t.Errorf("Put(%s) of the same bytes again (a retried write): %v, want nil", tc.name, err)
			}
			if err := s.Put(ctx, tc.name, []byte("two"), tc.kind); !errors.Is(err, tiles.ErrExists) {
				t.Errorf("Put(%s) of other bytes: %v, want ErrExists", tc.name, err)
			}
			if got, err := s.Get(ctx, tc.name, 100); err != nil || string(got) != "one" {
				t.Errorf("Get(%s) = %q, %v; want it unchanged", tc.name, got, err)
			}
		}
	})
	t.Run("CheckpointReplaced", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		if _, err := s.Get(ctx, tiles.CheckpointName, 100); !errors.Is(err, tiles.ErrNotFound) {
			t.Errorf("Get(checkpoint) of an empty store: %v, want ErrNotFound", err)
		}
		for _, v := range []string{"first\n", "second, longer\n", "3\n"} {
			if err := s.Put(ctx, tiles.CheckpointName, []byte(v), tiles.Checkpoint); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(ctx, tiles.CheckpointName, 100); err != nil || string(got) != v {
				t.Errorf("Get(checkpoint) = %q, %v; want %q", got, err, v)
			}
		}
	})
	t.Run("Bounds", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		if err := s.Put(ctx, "tile/1/000", make([]byte, 8192), tiles.Full); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "tile/1/000", 8191); err == nil {
			t.Error("Get read an object larger than its bound")
		}
		if _, err := s.Get(ctx, "tile/1/001", 8192); !errors.Is(err, tiles.ErrNotFound) {
			t.Errorf("Get(missing) = %v, want ErrNotFound", err)
		}
		for _, bad := range []string{"", "tile/0/1", "../checkpoint", "tile/0/000/../x", "other"} {
			if err := s.Put(ctx, bad, []byte("x"), tiles.Full); err == nil {
				t.Errorf("Put(%q) accepted", bad)
			}
		}
	})
}
