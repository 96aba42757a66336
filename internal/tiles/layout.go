package tiles

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// Height is the height of every tile: 2^8 = 256 hashes (or entries) wide, as tlog-tiles
// fixes it.
const Height = 8

// Width is the number of hashes in a full tile, and of entries in a full bundle.
const Width = 1 << Height

// CheckpointName is the name of the checkpoint file.
const CheckpointName = "checkpoint"

// MaxEntryBytes is the largest entry an entry bundle can hold: its length is a big-endian
// uint16.
const MaxEntryBytes = 1<<16 - 1

// ErrEntryTooLarge is wrapped when an entry is longer than MaxEntryBytes.
var ErrEntryTooLarge = errors.New("entry too large for a tlog-tiles entry bundle")

// Kind says how a published object may change, and so how long a reader may cache it.
type Kind int

const (
	// Full is a full tile or entry bundle: written once, never changed, cacheable forever.
	Full Kind = iota
	// Partial is a partial tile or bundle: written once at its path (the path names its
	// width), but it may be deleted once the full one exists, so cached briefly.
	Partial
	// Checkpoint is the checkpoint file: replaced as the log grows, cached for seconds.
	Checkpoint
)

func (k Kind) String() string {
	switch k {
	case Full:
		return "full"
	case Partial:
		return "partial"
	case Checkpoint:
		return "checkpoint"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// KindOf returns the kind of the object at name: Checkpoint for CheckpointName, Partial
// for a path with a .p/<W> suffix, Full otherwise.
func KindOf(name string) Kind {
	switch {
	case name == CheckpointName:
		return Checkpoint
	case strings.Contains(name, ".p/"):
		return Partial
	}
	return Full
}

// Path returns the tlog-tiles path of t (a tile of Height; level -1 is an entry bundle):
// tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>].
func Path(t tlog.Tile) string {
	// sumdb's tile/8/<L>/… and tile/8/data/… are tlog-tiles' tile/<L>/… and tile/entries/….
	p := strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/", Height))
	if rest, ok := strings.CutPrefix(p, "data/"); ok {
		return "tile/entries/" + rest
	}
	return "tile/" + p
}

// ParsePath parses a tlog-tiles tile or entry bundle path; entry bundles have level -1.
// Only the canonical form is accepted (no leading zeroes beyond the three digits, W from 1
// to 255).
func ParsePath(name string) (tlog.Tile, error) {
	rest, ok := strings.CutPrefix(name, "tile/")
	if !ok {
		return tlog.Tile{}, fmt.Errorf("%q is not a tile path", name)
	}
	sumdb := fmt.Sprintf("tile/%d/", Height) + rest
	if e, ok := strings.CutPrefix(rest, "entries/"); ok {
		sumdb = fmt.Sprintf("tile/%d/data/", Height) + e
	} else if strings.HasPrefix(rest, "data/") {
		return tlog.Tile{}, fmt.Errorf("%q is not a tile path", name)
	}
	t, err := tlog.ParseTilePath(sumdb)
	if err != nil || t.L > 63 {
		return tlog.Tile{}, fmt.Errorf("%q is not a tile path", name)
	}
	return t, nil
}

// EntryTile returns the entry bundle with the same coordinates as the level-0 tile t.
func EntryTile(t tlog.Tile) tlog.Tile {
	t.L = -1
	return t
}

// AppendEntry appends one entry to a bundle: its length as a big-endian uint16, then its
// bytes. An entry longer than MaxEntryBytes is an error wrapping ErrEntryTooLarge.
func AppendEntry(bundle, entry []byte) ([]byte, error) {
	if len(entry) > MaxEntryBytes {
		return bundle, fmt.Errorf("%w: %d bytes, more than %d", ErrEntryTooLarge, len(entry), MaxEntryBytes)
	}
	bundle = binary.BigEndian.AppendUint16(bundle, uint16(len(entry)))
	return append(bundle, entry...), nil
}

// ParseBundle splits an entry bundle into its entries (sub-slices of b). A bundle that
// ends inside an entry, or holds more than Width entries, is an error.
func ParseBundle(b []byte) ([][]byte, error) {
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 2 {
			return nil, errors.New("entry bundle: truncated length")
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			return nil, fmt.Errorf("entry bundle: entry %d is %d bytes, %d left", len(out), n, len(b)-2)
		}
		out = append(out, b[2:2+n])
		b = b[2+n:]
		if len(out) > Width {
			return nil, fmt.Errorf("entry bundle: more than %d entries", Width)
		}
	}
	return out, nil
}
