// Package padwire is the binary framed form of a pad's blocks, served by lockerd's
// GET /v1/pads/{pad_id}/blocks when — and only when — a client asks for it with
// Accept: application/vnd.agentgate.pad-blocks. The JSON form stays the contract; this
// one carries the same members without base64 or a second copy of the payload as text,
// so a verifying reader can hash payload bytes as they arrive.
//
// A stream is a header, one frame per block, and an end mark; integers are big-endian:
//
//	header  "AGPB" 0x02 | u16 n | pad_id (n bytes) | u32 from | u32 to | u32 count | u32 total_blocks |
//	        u16 n | manifest (n bytes: the pad's GET /manifest object, from the same pad record)
//	frame   u32 len (>= 16, the bytes that follow) | u32 seq | i64 created_at |
//	        u8 n | prev_hash | u8 n | curr_hash | u16 n | content_type | payload (the rest)
//	end     u32 0
//
// The members mean what the JSON members of the same names mean (docs/padlock.md); the
// stream must end right after the end mark. Hashes are carried as the daemon holds them
// (64 lowercase hex characters), unverified: the reader recomputes the chain.
package padwire
