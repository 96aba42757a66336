// Package review is the web page of `toolwarrant review`: every pending and drifted tool of
// the catalog, per server, with what a person needs to decide on one exact definition —
// the graded diff against the approved version (else the previous one), the schema diff
// as a tree, annotation flips called out, the exact canonical definition, every hidden or
// reordering character as a badge with its code point (and the ASCII a run of tag
// characters spells), look-alike names letter by letter with each letter's script, and
// the full digest — and forms that approve, reject or roll back through the decision use
// case, warrant.Service.DecideAs.
//
// It is a transport: a [Source] reads the catalog and records decisions. [ServiceSource]
// is the embedded catalog with an attester (an SSH key locally); the toolwarrant command
// supplies a source over the approvals API of an AWS deployment, whose Lambda calls
// DecideAs with the caller's IAM principal. The page never decides anything itself.
//
// # What a decision is bound to
//
// Every page is rendered from one audit head, read before anything else and checked
// again after (the page is re-read until both agree). A decision form carries that head
// and the full digest shown; the decision request names both (DecisionRequest.ReadHead),
// so the statement the decider signs names the digest shown and the head the page was
// rendered from. If the log moved since, nothing is signed or recorded: the answer is
// 409 and the page is rendered again from the new head, listing the audit entries
// written in between and what they changed on the tool. A version with suspicious text
// is approved only with the explicit acceptance the form asks for, recorded in the
// statement as with `--accept-suspicious`.
//
// A source that approves in bulk ([BulkApprover]; [ServiceSource] does) also gets one form
// per server for its routine first-sight tools (POST /approve-all): the exact tools and
// digests the form lists and the head, signed as one statement by
// warrant.Service.ApproveAllAs, which takes only what it would offer itself at that head.
//
// # Security
//
// The page renders hostile upstream text, and anything able to send a request to a
// loopback port could try to decide through it. So:
//
//   - [Listen] binds loopback addresses only, and every request must name the bound
//     address in its Host header (a DNS-rebinding page cannot reach it by another name).
//   - Every request needs the per-run token: the printed URL carries it once (?token=),
//     the answer sets it as an HttpOnly, SameSite=Strict cookie and moves on to the bare
//     URL; everything else without the cookie is refused with 403.
//   - Every state change is a POST with the per-run CSRF token of the form and an Origin
//     header equal to the page's own origin (other ports of 127.0.0.1 are the same site,
//     so the cookie alone would not do). A refused request changes nothing.
//   - Content-Security-Policy: default-src 'none'; scripts and styles only from the page's
//     own /static/ files (embedded with go:embed), no inline script or style, no external
//     asset, forms only to itself, no framing. Upstream text is rendered by html/template
//     as text only: no template.HTML, no upstream text in a URL or an attribute that acts
//     (server and tool names travel in forms base64url-encoded). Characters textguard
//     rates High never reach the page raw: each becomes a badge.
//   - The page works with JavaScript disabled: the only script adds copy buttons.
//   - It never shows secrets: no header values (the catalog holds only variable names),
//     no key material (signers are shown by principal and fingerprint), and not the token.
//
// [WriteReport] writes the same view as one self-contained HTML file (the stylesheet
// inline under a hash-pinned CSP, no script, no forms) for review in a pull request.
package review
