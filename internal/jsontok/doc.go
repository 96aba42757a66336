// Package jsontok is agentgate's one JSON tokenizer: every place that reads JSON text
// byte by byte, rather than decoding it into Go values, reads it through a [Scanner].
// Its callers are internal/canon (RFC 8785 canonicalization), internal/extmcp (the
// tools/list decision, which keeps or drops each tool object as the exact bytes the
// gateway sent), internal/lockerclient (the strict decoder of Padlock pages) and
// internal/mcpserver (tool arguments re-encoded as Python's json.dumps would); code that
// decodes JSON into Go values uses encoding/json.
//
// A Scanner is recursive descent over one byte slice: [Scanner.Object] and
// [Scanner.Array] hold the grammar's loops and call back for each member or element, and
// the caller picks what to do with each value — read a string, a number or a literal,
// descend, or [Scanner.Skip] it, which checks the whole value and returns its span. Every
// [Token] carries its byte offsets, so callers can hash or copy exactly the bytes that
// were sent. The Scanner never reads past its input, allocates nothing but errors, and
// bounds nesting (the Scanner's maxDepth), so hostile input cannot exhaust the stack.
//
// # What is refused
//
// Everything that is not RFC 8259 JSON: syntax errors, trailing commas, comments, single
// quotes, a byte order mark, unescaped control characters in strings, unknown escapes,
// leading zeros, numbers without digits after '.' or 'e', NaN and Infinity, early ends,
// and data after the value ([Scanner.End]). By default strings follow I-JSON (RFC 7493)
// too: invalid UTF-8 and \u escapes of unpaired surrogates are refused, never replaced.
// Two [Flags] relax that for callers whose contract is looser: [AllowLoneSurrogates]
// (what encoding/json.Valid accepts; extmcp's pass-through members, lockerclient) and
// [AllowInvalidUTF8] (mcpserver, which reads arguments as Python does). Every refusal is
// an [*Error] with the byte offset and a reason; the reasons are the phrases canon
// documents.
//
// What a tokenizer cannot know is left to its callers: duplicate member names (canon
// refuses them after decoding, lockerclient refuses repeats of the members it reads,
// mcpserver keeps the last as Python does), number magnitudes (canon refuses overflow),
// and what a string's content means.
//
// # Strings
//
// [Scanner.ReadString] checks a string's content in the same pass that finds its end,
// eight bytes at a time. [Scanner.RawString] only finds the end, for long strings the
// caller checks by decoding them strictly or comparing them with trusted bytes (a Padlock
// page's base64 payloads), so they are read once; [Scanner.RawValue] does the same for a
// whole value (extmcp's listed tools, which canon checks). [AppendUnquote], [Equal] and
// [UnescapeAt] decode content under the same rules. [AppendQuote] is the other direction,
// the one string escaper: RFC 8785's form for canon, encoding/json's for httpapi's
// hand-written /blocks encoder.
//
// # Why not a library
//
// encoding/json/jsontext (Go 1.26) needs GOEXPERIMENT=jsonv2. Its module twin,
// github.com/go-json-experiment/json/jsontext, gives value spans and refuses lone
// surrogates and invalid UTF-8, but it checks every byte of a Padlock page's payloads:
// measured in instructions, tokenizing a 256 KiB page cost it about as much as
// lockerclient's whole read of that page, base64 decoding and SHA-256 chain included
// (11.0M against 12.0M). Its Canonicalize costs about twice canon's instructions on the
// tool corpus, its nesting bound is fixed at 10000, and its errors' offsets and wording
// differ from the ones canon pins. canon is a domain package that imports only the
// standard library and pure helpers, which this package is.
package jsontok
