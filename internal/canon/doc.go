// Package canon implements the JSON Canonicalization Scheme (JCS) of RFC 8785: one exact
// byte form for any JSON value, so that equal values hash equal. It is the foundation of
// agentgate's digests — agentgate.lock's inputSchemaHash and surfaceHash, and
// toolwarrant's tool digests, the SHA-256 of the canonical form of a tool object as
// served — so its output must never change for accepted input, and it must never accept
// input whose meaning it would have to guess.
//
// [Transform] (and [Append]) parse JSON text and write it canonically: no insignificant
// whitespace; object members sorted by name compared as arrays of UTF-16 code units (not
// bytes: U+FB33 sorts after U+1F600); strings with only '"', '\\' and control characters
// escaped ([AppendString]); numbers as IEEE-754 doubles in ECMAScript's shortest form
// ([AppendNumber]). Array order and string contents are kept as they are; no Unicode
// normalization is done.
//
// # What is refused
//
// Transform refuses, with an [*Error] naming the byte offset:
//
//   - Anything that is not one RFC 8259 JSON text: syntax errors, trailing commas, comments,
//     single quotes, a byte order mark, unescaped control characters in strings, unknown
//     escapes, leading zeros (01, -00), a number without digits after '.' or 'e', input
//     that ends early, and any data after the value but whitespace.
//   - Invalid UTF-8 anywhere, inside strings included: overlong forms, encoded surrogates,
//     truncated sequences, stray continuation bytes.
//   - Lone surrogates in \u escapes: a high surrogate (\uD800–\uDBFF) not followed at once
//     by a \u escape of a low one (\uDC00–\uDFFF), or a low one on its own.
//   - Duplicate member names in one object, compared after decoding escapes, so "a" and
//     "\u0061" are the same name.
//   - NaN and Infinity (they are not JSON, though some encoders write them), and numbers
//     whose magnitude rounds beyond the largest double, such as 1e400. Numbers that
//     underflow are accepted: they read as 0 or a subnormal, as IEEE-754 says.
//   - Nesting deeper than [MaxDepth] (1000) arrays and objects, which bounds the parser's
//     recursion.
//
// Refusing rather than replacing matters for digests. A canonicalizer that turns invalid
// UTF-8 or a lone surrogate into U+FFFD, keeps the last of two duplicate names, or clamps
// 1e400 to the largest double maps distinct inputs to one canonical form, and so to one
// digest: a client that reads the duplicate name's first value, or a tool description
// that differs only in a replaced byte, would then pass as the document that was pinned
// or signed. Different JSON parsers also disagree on exactly these inputs, which is the
// gap an attacker uses. Refusing them keeps the digest a commitment to one meaning.
//
// When input has several problems, the one reported is the first found reading left to
// right, except that an object is read to its end before its names are compared: a
// duplicate name is reported only if the rest of its object is well formed.
//
// The JSON text is read by internal/jsontok, agentgate's one JSON tokenizer, with its
// strict (I-JSON) defaults; jsontok reports refusals of the text itself in the words
// above, and canon adds what JCS needs on top of the grammar: duplicate names, number
// magnitudes, member order and the output form.
//
// The package is pure Go, holds no global mutable state beyond a sync.Pool of buffers, and
// all its functions are safe for concurrent use.
package canon
