// Package tiles publishes toolwarrant's audit tree as a static c2sp.org/tlog-tiles log: the
// files a monitor, a mirror or a witness reads with nothing but HTTP GETs and
// golang.org/x/mod/sumdb/tlog.
//
//	checkpoint                   the newest C2SP checkpoint note (replaced as the log grows)
//	tile/<L>/<N>                 a full hash tile: 256 hashes of level L (8,192 bytes)
//	tile/<L>/<N>.p/<W>           a partial hash tile of W hashes, for a checkpoint's size
//	tile/entries/<N>             a full entry bundle: 256 entries, each a big-endian uint16
//	tile/entries/<N>.p/<W>       length and the entry's bytes; a partial one of W entries
//
// N is written in 3-digit path elements, all but the last prefixed with x (1234067 is
// x001/x234/067). The tree is the audit tree of internal/audit: entry i of a bundle is the
// canonical body of audit entry i+1, exactly the bytes whose RFC 6962 leaf hash
// (SHA-256(0x00 || body), tlog.RecordHash) is hash i of the level-0 tile, so a client
// recomputes every leaf from the bundles. Tile math is sumdb/tlog's, with height 8 (its
// tile/8/L/N paths are tlog-tiles' tile/L/N; its data level is tile/entries).
//
// [Writer] publishes a signed checkpoint note over a [Store]: it reads the checkpoint
// already published (size M, verified under the checkpoint verifier key), authenticates
// the tiles it needs from the store against it (tlog.TileHashReader), reads from the log
// only the entries after the last full bundle before M, and writes exactly the tiles
// tlog.NewTiles(8, M, N) names, the bundles of those entries and then the note as
// checkpoint. Full tiles and bundles are never rewritten: a file that exists with other
// bytes is an error wrapping checkpoint.ErrRewritten, and nothing after it is written.
// Partial tiles are written once per size and kept (the spec lets a log delete them once
// the full tile exists; this one does not). An entry longer than 65,535 bytes cannot be put
// in a bundle; the writer refuses it with ErrEntryTooLarge and publishes nothing past it.
//
// [Dir] is the Store of a directory (serve it with any static file server); the S3 one is
// internal/tiles/s3tiles. The package is pure: the standard library, audit, checkpoint,
// warrant's types and golang.org/x/mod/sumdb. See docs/transparency-log.md, "Static tiles".
package tiles
