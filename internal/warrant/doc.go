// Package warrant is the domain core of toolwarrant: the catalog of upstream MCP servers,
// their tools, the immutable versions of each tool definition, the proposals a crawl opens,
// the observations every crawl leaves behind, the decisions people make on them, and drift
// grading between two versions.
//
// # Digests
//
// A version is one exact tool definition. Its [Digest] is the SHA-256 of the RFC 8785
// canonical JSON ([canon.Transform]) of the whole tool object exactly as the server sent
// it, _meta and unknown fields included: "sha256:" followed by 64 lower-case hex digits.
// A tool object that is not valid I-JSON — invalid UTF-8, a lone surrogate escape, a
// duplicate member name, a number beyond a double — is refused, never repaired, with an
// [*IngestError] naming the server, the tool and the byte offset, because a repaired
// definition would hash the same as a different one.
//
// # History
//
// Versions, observations (which digest each crawl saw, when and by whom), proposals and
// decisions are history: a driver never updates or deletes them. A crawl of one server is
// recorded by [Catalog.RecordCrawl] in one atomic write, together with the new versions,
// the proposals they open and — when an [Auditor] is configured — the audit records that
// describe it, chained from the audit head the caller read. A crawl is numbered per
// server and written only if the server's last crawl is still the one the service read
// (check-and-set), so two concurrent crawls never interleave.
//
// # Derived state
//
// What the catalog says of each tool — its current and previous digest, its approved
// digest, the latest decision on each digest, whether the server's last crawl still lists
// it, and so its State — is derived here and only here: [Index] folds a server's crawl
// records ([Index.Apply]), [ApprovalState] a tool's decisions ([ApprovalState.Decide]).
// Drivers check each record and decision with [ValidateCrawl] and [ValidateDecision],
// store the derived state in the same write as the record or decision it derives from,
// and read it back ([Index.Records], [Index.Pending]); they never derive it themselves.
// [RebuildIndex] and [RebuildApproval] derive it once from the history of a catalog
// written before drivers kept it.
//
// # Crawl runs
//
// [Service.Crawl] is the one crawl run of the CLI and the crawl function: it selects the
// servers, resolves their headers ([HeaderResolver]), lists them ([Lister]: the crawler,
// over the network) and records each listing with [Service.Ingest], one outcome per
// server.
//
// # Decisions
//
// A named person approves, rejects or rolls back one exact digest through
// [Service.DecideAs], the one decision flow, whoever decides. An [Attester] says who the
// decider is and attests the decision: an SSH key on the trust list (trust.SSHAttester,
// the CLI) or the caller's IAM principal (iamattest.Attester, the approvals API).
// [Service.CheckDecision] holds the rules: an exact recorded digest, suspicious text only
// when accepted, separation of duties, rollbacks to earlier approvals. The decision is
// written with its audit entry over the audit head the decider read, and refused
// (ErrStale) if the log or the approval moved on since.
//
// # Drift
//
// [Grade] compares two versions with a semantic diff of the tool object and its JSON
// Schemas (added, removed and changed properties and keywords, each with an RFC 6901 JSON
// pointer) and grades every change CRITICAL, WARNING or INFO by the rules documented in
// docs/drift-grading.md; the grade of a drift is that of its worst change. [Inspect]
// flags text that could smuggle instructions to a model or mislead the approver
// (internal/textguard): invisible and format characters, and names that are confusable
// with another tool's name or mix scripts.
//
// The package imports only the standard library and agentgate's pure helpers (canon,
// textguard); storage, transports and the network are adapters that plug into the
// [Catalog] port.
package warrant
