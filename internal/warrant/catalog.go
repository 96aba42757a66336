package warrant

import "context"

// Catalog is the storage port of toolwarrant. Every method is atomic on its own, safe for
// concurrent use and honours ctx; a failed or cancelled write leaves nothing behind. Writes
// are check-and-set on what the caller read (a server's last crawl, a tool's approved
// digest, the audit head), so no process-wide lock is needed and a driver can implement
// them with conditional writes.
//
// Every write takes an AuditAppend: when it holds records, the write succeeds only if the
// audit head is still a.Prev and appends the records in the same transaction, so a
// decision or observation without its audit entry (or an entry without its decision) is
// impossible. ErrConflict when the head moved; nothing is written.
//
// History — versions, crawls with their observations, proposals, decisions and audit
// records — is never updated or deleted by any method.
//
// Errors wrap ErrNotFound, ErrConflict, ErrInvalid or ErrUnavailable as documented per
// method; anything else is an unexpected driver failure.
type Catalog interface {
	// AddServer stores s (its LastCrawl is ignored and starts at 0). Adding a server
	// identical in URL, AllowPrivate and Headers to the stored one is a no-op returning
	// nil (and appends nothing); a different one with the same name is ErrConflict.
	AddServer(ctx context.Context, s Server, a AuditAppend) error

	// Server returns the named server with its LastCrawl and LastSourceCrawl. ErrNotFound.
	Server(ctx context.Context, name string) (Server, error)

	// Servers returns every server, sorted by name.
	Servers(ctx context.Context) ([]Server, error)

	// PinPackage stores a pin of a server's package (p is valid), if and only if p.Seq is
	// the server's newest pin's Seq+1, or 1 when it has none (ErrConflict otherwise;
	// ErrNotFound for an unknown server). Pins are never updated or deleted; Server and
	// Servers return the newest as Server.Package.
	PinPackage(ctx context.Context, p PackagePin, a AuditAppend) error

	// RecordCrawl stores one crawl of one server, if and only if r.Crawl.Seq is the
	// server's LastCrawl+1 (ErrConflict otherwise; ErrNotFound for an unknown server), and
	// advances LastCrawl. In the same transaction it stores r.Versions, put-if-absent: a
	// version already stored with the same canonical bytes is left as it is, one with other
	// bytes under the same digest is ErrConflict; and r.Proposals, likewise. Observations
	// must be sorted by tool with unique names; versions and proposals must belong to the
	// crawl's server (ErrInvalid).
	//
	// Both sources share the sequence: a record with Source SourceGateway is numbered and
	// check-and-set like a crawl, but it is partial — it advances LastCrawl and not
	// LastSourceCrawl, and a tool it does not observe is not removed by it.
	RecordCrawl(ctx context.Context, r CrawlRecord, a AuditAppend) error

	// Crawl returns crawl seq of server with its observations. ErrNotFound.
	Crawl(ctx context.Context, server string, seq int64) (Crawl, error)

	// Version returns one version. ErrNotFound.
	Version(ctx context.Context, server, tool string, d Digest) (Version, error)

	// Versions returns the versions of one tool in the order they were first seen (an
	// empty slice for an unknown tool).
	Versions(ctx context.Context, server, tool string) ([]Version, error)

	// VersionKeys returns the key of every version of every tool of server, sorted by tool
	// then digest: what a crawl compares its listing with to find new versions.
	VersionKeys(ctx context.Context, server string) ([]VersionKey, error)

	// Tools returns one record per tool that has at least one version or was observed
	// with a digest by a SourceGateway record, sorted by server then tool, read in one
	// consistent snapshot. A tool's Current is the observation of the highest-numbered
	// record, of either source, that observed it; ServerLastCrawl counts SourceCrawl
	// records only; Previous looks at SourceCrawl observations only (see ToolRecord).
	Tools(ctx context.Context) ([]ToolRecord, error)

	// ServerTools returns the records Tools returns for one server's tools (sorted by
	// tool; empty for a server with none), reading only that server's state: what the
	// gateway processor refreshes for each server it serves. ErrNotFound for an unknown
	// server.
	ServerTools(ctx context.Context, server string) ([]ToolRecord, error)

	// Proposals returns the pending proposals (no decision names their digest), sorted by
	// server, tool, then the order they were opened.
	Proposals(ctx context.Context) ([]Proposal, error)

	// Decide records d and updates the tool's approval: approved and rolled_back make
	// d.Digest the approved digest; rejected clears the approval if it was d.Digest. It
	// writes only if the tool's approved digest is still d.Expect (ErrConflict otherwise)
	// and d.Digest is a stored version of the tool (ErrNotFound otherwise). The decision use case
	// (Service.DecideAs) applies who may decide what; the port only guarantees the check-and-set.
	Decide(ctx context.Context, d Decision, a AuditAppend) error
	// DecideAll writes several decisions on distinct tools with a's audit records in one
	// transaction: all or none, each under Decide's conditions (a bulk approval). A store
	// whose transaction cannot hold them refuses with ErrInvalid and writes nothing.
	DecideAll(ctx context.Context, ds []Decision, a AuditAppend) error

	// Decisions returns the decisions on one tool, oldest first.
	Decisions(ctx context.Context, server, tool string) ([]Decision, error)

	// Approvals returns every tool's current approved digest, sorted by server then tool,
	// in one read: what the gateway processor (extmcp) loads and refreshes.
	Approvals(ctx context.Context) ([]Approval, error)

	// Policies returns the active review policies (Seq 0 and none when none was ever
	// added).
	Policies(ctx context.Context) (PolicySet, error)
	// SetPolicies replaces the active review policies with next, if and only if the
	// stored set's Seq is next.Seq-1 (ErrConflict otherwise; ErrInvalid when next is not
	// a valid set). What a policy approved is not touched.
	SetPolicies(ctx context.Context, next PolicySet, a AuditAppend) error

	// AppendAudit appends records that accompany no other write (trust list changes, for
	// example), if the head is still a.Prev. ErrConflict otherwise; ErrInvalid when the
	// records do not link to a.Prev or a holds none.
	AppendAudit(ctx context.Context, a AuditAppend) error

	// AuditHead returns the audit head (Genesis() for an empty log).
	AuditHead(ctx context.Context) (AuditHead, error)

	// AuditRecords returns up to limit records with Seq > after, in order.
	AuditRecords(ctx context.Context, after int64, limit int) ([]AuditRecord, error)
}
