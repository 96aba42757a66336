package locker

// Limits of the wire contract (docs/spec/padlock-wire.md §1.7). They are fixed: clients in
// the wild rely on them.
const (
	// MaxBlockBytes is the largest block payload (64 KiB); one byte more is refused.
	MaxBlockBytes = 65536
	// MaxPadBytes is every pad's byte quota, the sum of its payloads (256 KiB).
	MaxPadBytes = 262144
	// DefaultMaxBlocks is a new pad's block quota when the request names none.
	DefaultMaxBlocks = 32
	// MaxMaxBlocks is the largest block quota a pad can be created with.
	MaxMaxBlocks = 4096
	// DefaultTTLSeconds is a new pad's write window when the request names none.
	DefaultTTLSeconds = 3600
	// MaxTTLSeconds is the longest write window (30 days).
	MaxTTLSeconds = 2592000
	// MaxSliceBlocks is the most blocks one /blocks read returns.
	MaxSliceBlocks = 256
	// MaxSliceBytes is the most payload bytes one /blocks read returns.
	MaxSliceBytes = 65536
	// MaxJSONBodyBytes caps the small JSON bodies of create and tickets.
	MaxJSONBodyBytes = 4096
	// DefaultLeaseSeconds is the read_once lease window (LOCKER_READ_LEASE_SECONDS).
	DefaultLeaseSeconds = 600
)
