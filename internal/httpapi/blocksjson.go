package httpapi

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/jsontok"
	"github.com/agentgate-dev/agentgate/internal/locker"
)

// appendBlocksBody writes the /blocks response exactly as writeJSON would encode blocksBody,
// without reflection and without materialising each payload twice: base64 goes straight into
// the output and payload_utf8 is escaped in runs. TestBlocksEncoderMatchesEncodingJSON holds
// it byte-identical to encoding/json. It is the daemon's hottest path: every reader walks
// whole chains through it.
func appendBlocksBody(dst []byte, s locker.Slice) []byte {
	dst = append(dst, `{"pad_id":`...)
	dst = appendJSONString(dst, s.PadID)
	dst = append(dst, `,"from":`...)
	dst = strconv.AppendInt(dst, int64(s.From), 10)
	dst = append(dst, `,"to":`...)
	dst = strconv.AppendInt(dst, int64(s.To), 10)
	dst = append(dst, `,"count":`...)
	dst = strconv.AppendInt(dst, int64(len(s.Blocks)), 10)
	dst = append(dst, `,"total_blocks":`...)
	dst = strconv.AppendInt(dst, int64(s.TotalBlocks), 10)
	dst = append(dst, `,"blocks":[`...)
	for i, b := range s.Blocks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"seq":`...)
		dst = strconv.AppendInt(dst, int64(b.Seq), 10)
		dst = append(dst, `,"prev_hash":`...)
		dst = appendJSONString(dst, b.PrevHash)
		dst = append(dst, `,"curr_hash":`...)
		dst = appendJSONString(dst, b.CurrHash)
		dst = append(dst, `,"content_type":`...)
		dst = appendJSONString(dst, b.ContentType)
		dst = append(dst, `,"payload_b64":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, b.Payload)
		dst = append(dst, `","payload_utf8":`...)
		if utf8.Valid(b.Payload) {
			dst = appendJSONString(dst, string(b.Payload))
		} else {
			dst = append(dst, "null"...)
		}
		dst = append(dst, `,"created_at":`...)
		dst = strconv.AppendInt(dst, b.CreatedAt, 10)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// appendJSONString appends s as a JSON string the way encoding/json does with SetEscapeHTML
// (false): '"' and '\\' escaped, control characters as \n \r \t \b \f or \u00XX, U+2028 and
// U+2029 escaped, invalid UTF-8 as U+FFFD (callers pass valid UTF-8).
func appendJSONString(dst []byte, s string) []byte {
	dst, _ = jsontok.AppendQuote(dst, s, jsontok.EscapeLineSeparators|jsontok.AllowInvalidUTF8)
	return dst
}
