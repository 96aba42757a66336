// Package findings grades what an MCP definition tells the model, on first sight: the
// text of a tool (name, title, description, and every string and member name of its input
// and output schemas — property descriptions, titles, enums, defaults, examples), of a
// prompt and its arguments, or of a server's instructions. Drift grading
// (internal/warrant) says what changed between two versions; findings say what is wrong
// with one version, so a new tool is more than "new".
//
// The rules are offline and explainable: fixed phrase patterns, no model, no network, no
// I/O. Each [Finding] names its rule (a [warrant.Rule], listed in [Rules] for SARIF), a
// [warrant.Severity] graded like drift (CRITICAL, WARNING, INFO), the RFC 6901 JSON
// pointer of the text it is in, a bounded excerpt with invisible characters escaped by
// textguard (`\u200b`, `<U+E0041>`), and a one-line reason that quotes the phrases that
// matched and says why they matter. docs/findings.md describes every rule.
//
// The rule families are:
//
//   - [RuleSecretAccess]: instructions to read private keys, credential and client
//     configuration files (~/.ssh, id_rsa, ~/.aws, .env, mcp.json, ~/.cursor), passwords
//     or tokens.
//   - [RuleExfiltration]: instructions to send data elsewhere — a conversation, a file, a
//     secret put into a parameter, or sent to a fixed URL, address, number or webhook.
//   - [RuleCrossTool]: instructions about other tools and servers — "before using any
//     other tool", "instead of the X tool", "when the user asks to send email, always
//     BCC", rewriting another call's recipient.
//   - [RuleConcealment]: instructions to hide from the user ("do not tell the user"),
//     markers that pose as system text (<IMPORTANT>, "this is a system instruction",
//     "ignore previous instructions"), and padding that pushes text out of view.
//   - [RuleHiddenCharacters]: characters textguard rates High (zero-width, bidi, tag,
//     control, ANSI escapes); the ASCII hidden in tag characters is decoded and scanned by
//     the other rules too.
//   - [RuleUnscanned]: text past the scan bounds, reported rather than silently skipped.
//
// Matching is sentence by sentence: most rules need two or three kinds of phrase in one
// sentence (a secret location and a verb that reads or passes it), which keeps ordinary
// documentation ("Read the complete contents of a file") from matching. High-severity
// invisible characters are removed before matching, so a zero-width space inside "id_rsa"
// does not hide it; member names are split at underscores, hyphens and camel case, so a
// parameter named content_from_reading_ssh_id_rsa reads as the instruction it is.
//
// Scanning is bounded: [MaxFieldBytes] per string, [MaxTargetBytes] and [MaxStrings] per
// definition, [MaxDepth] of schema nesting; what lies past a bound is reported, not
// skipped. The patterns are compiled once, at package initialisation; each carries the
// literals it cannot match without, all of them found in one Aho–Corasick pass over a
// sentence, so a pattern runs only on a sentence that could match it, and Go's regular
// expressions run in time linear in their input. Output is deterministic: one finding per
// rule and pointer (the most severe match, with a count of the others), sorted by
// severity, pointer and rule. The package does no I/O and is safe for concurrent use.
package findings
