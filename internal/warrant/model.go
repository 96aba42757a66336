package warrant

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Server is an upstream MCP server in the catalog.
type Server struct {
	// Name is the operator's name for the server: 1 to 64 ASCII letters, digits, '.', '_'
	// and '-', starting with a letter or digit. It is the key of everything below it.
	Name string
	// URL is the server's Streamable HTTP (or legacy SSE) endpoint, http or https.
	URL string
	// AllowPrivate lets the crawler connect to loopback, private and link-local addresses
	// for this server. Cloud metadata addresses stay refused.
	AllowPrivate bool
	// Headers name the HTTP headers sent on every request to the server and where each
	// value is read from at crawl time: an environment variable, or (on AWS) a Secrets
	// Manager secret or SSM parameter. Values are never stored.
	// Sorted by Header, case-insensitively.
	Headers []HeaderRef
	// AddedAt and AddedBy say when and by whom the server was added.
	AddedAt time.Time
	AddedBy string
	// LastCrawl is the number of the server's last recorded crawl, 0 before the first: the
	// check-and-set counter of every RecordCrawl, whatever its Source. The store maintains
	// it; it is ignored by AddServer.
	LastCrawl int64
	// LastSourceCrawl is the number of the server's last crawl with Source SourceCrawl (a
	// complete listing by the crawler), 0 before the first; gateway records never move it.
	// The store maintains it; it is ignored by AddServer.
	LastSourceCrawl int64
	// Package is the newest pin of what the server runs from, nil when it has none
	// (PinPackage). The store maintains it; it is ignored by AddServer.
	Package *PackagePin `json:",omitempty"`
}

// HeaderRef is one per-server HTTP header and where its value comes from: exactly one of
// Env and Secret.
type HeaderRef struct {
	// Header is the HTTP header name, such as "Authorization".
	Header string `json:"header"`
	// Env is the environment variable holding the value, such as "WEATHER_TOKEN".
	Env string `json:"env,omitempty"`
	// Secret is the ARN of an AWS Secrets Manager secret (its SecretString is the value)
	// or of an SSM parameter (a SecureString, decrypted), read by the crawl function at
	// each crawl, so a rotated token is used at once. Only the AWS deployment reads it.
	Secret string `json:"secret,omitempty"`
}

// secretARN accepts the ARN of a Secrets Manager secret or an SSM parameter. It is compiled
// on first use: every binary that links this package (the pads Lambda among them) would
// otherwise compile it at start.
var secretARN = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^arn:aws[a-z-]*:(secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+|ssm:[a-z0-9-]+:[0-9]{12}:parameter/[A-Za-z0-9/_.-]+)$`)
})

// The names below are checked by hand, not by regular expressions with counted repetition
// ({0,127}), which the regexp package expands into one state per repetition: hundreds of
// kilobytes built at every start of every binary that links this package.

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// validServerName: 1 to 64 of [A-Za-z0-9._-], the first a letter or digit.
func validServerName(s string) bool {
	if len(s) < 1 || len(s) > 64 || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// validHeaderName: an HTTP field name (RFC 9110 token) of 1 to 128 characters.
func validHeaderName(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && strings.IndexByte("!#$%&'*+.^_`|~-", c) < 0 {
			return false
		}
	}
	return true
}

// validEnvName: 1 to 128 of [A-Za-z0-9_], not starting with a digit.
func validEnvName(s string) bool {
	if len(s) < 1 || len(s) > 128 || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' {
			return false
		}
	}
	return true
}

// reservedHeaders are set by the HTTP or MCP transport and cannot be configured.
var reservedHeaders = []string{"connection", "content-length", "content-type", "host", "accept",
	"mcp-protocol-version", "mcp-session-id", "last-event-id", "te", "trailer", "transfer-encoding", "upgrade"}

// ValidateServerName returns ErrInvalid unless name is a valid server name.
func ValidateServerName(name string) error {
	if !validServerName(name) {
		return fmt.Errorf("%w: server name %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrInvalid, name)
	}
	return nil
}

// Validate checks the header name and variable name.
func (h HeaderRef) Validate() error {
	if !validHeaderName(h.Header) {
		return fmt.Errorf("%w: %q is not an HTTP header name", ErrInvalid, h.Header)
	}
	if slices.Contains(reservedHeaders, strings.ToLower(h.Header)) {
		return fmt.Errorf("%w: header %s is set by the transport and cannot be configured", ErrInvalid, h.Header)
	}
	switch {
	case h.Env != "" && h.Secret != "":
		return fmt.Errorf("%w: header %s names both an environment variable and a secret; give one", ErrInvalid, h.Header)
	case h.Secret != "":
		if len(h.Secret) > 2048 || !secretARN().MatchString(h.Secret) {
			return fmt.Errorf("%w: header %s: %q is not the ARN of a Secrets Manager secret (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME) or an SSM parameter (arn:aws:ssm:REGION:ACCOUNT:parameter/NAME)", ErrInvalid, h.Header, h.Secret)
		}
	case !validEnvName(h.Env):
		return fmt.Errorf("%w: %q is not an environment variable name (letters, digits and '_', not starting with a digit)", ErrInvalid, h.Env)
	}
	return nil
}

// SecretKind returns "secretsmanager" or "ssm" for a valid Secret ARN, else "".
func (h HeaderRef) SecretKind() string {
	if h.Secret == "" {
		return ""
	}
	kind, _, _ := strings.Cut(strings.SplitN(h.Secret, ":", 4)[2], ":")
	return kind
}

// Validate checks the server's name, headers and that its URL is an absolute http(s) URL.
// Address policy (SSRF) is the crawler's, at dial time.
func (s Server) Validate() error {
	if err := ValidateServerName(s.Name); err != nil {
		return err
	}
	if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") || !utf8.ValidString(s.URL) || strings.ContainsAny(s.URL, " \t\r\n") {
		return fmt.Errorf("%w: server %q: URL %q must be an http:// or https:// URL", ErrInvalid, s.Name, s.URL)
	}
	seen := map[string]bool{}
	for _, h := range s.Headers {
		if err := h.Validate(); err != nil {
			return fmt.Errorf("server %q: %w", s.Name, err)
		}
		if k := strings.ToLower(h.Header); seen[k] {
			return fmt.Errorf("%w: server %q: header %s given twice", ErrInvalid, s.Name, h.Header)
		} else {
			seen[k] = true
		}
	}
	return nil
}

// SortHeaders sorts refs by header name, case-insensitively.
func SortHeaders(refs []HeaderRef) {
	slices.SortFunc(refs, func(a, b HeaderRef) int { return strings.Compare(strings.ToLower(a.Header), strings.ToLower(b.Header)) })
}

// Source says what produced a crawl record.
type Source string

const (
	// SourceCrawl is a crawl by toolwarrant's crawler, talking to the upstream directly.
	SourceCrawl Source = "crawl"
	// SourceGateway is what the gateway processor (extmcp, `toolwarrant serve`) saw served and did not serve:
	// a partial listing (a tool missing from it is not removed) that records observations
	// of digests only. It opens no versions (the processor keeps no definitions), so a
	// digest it is the first to see has no version until a crawl records one.
	SourceGateway Source = "gateway"
)

// Observation is what one crawl saw of one tool: the digest of its definition, or why its
// ingestion was refused.
type Observation struct {
	// Tool is the tool's name.
	Tool string
	// Digest is the definition's digest; empty when Refused is set.
	Digest Digest
	// Refused says why the definition could not be given a digest; empty when accepted.
	Refused string
}

// Crawl is one listing of one server: which digest each tool had, when, and by whom.
type Crawl struct {
	// Server is the server crawled.
	Server string
	// Seq numbers the server's crawls from 1, in the order they were recorded.
	Seq int64
	// Source is what listed the server.
	Source Source
	// StartedAt and FinishedAt bound the listing.
	StartedAt, FinishedAt time.Time
	// By is the identity that crawled.
	By string
	// Observations are the tools seen, sorted by Tool, one per name.
	Observations []Observation
}

// Version is one exact definition of one tool. It is never updated or deleted.
type Version struct {
	Server, Tool string
	// Digest is DigestOf(Canonical).
	Digest Digest
	// Canonical is the RFC 8785 canonical JSON of the tool object.
	Canonical []byte
	// FirstSeenAt, FirstSeenBy and FirstCrawl record the crawl that first saw it.
	FirstSeenAt time.Time
	FirstSeenBy string
	FirstCrawl  int64
}

// Proposal is a digest seen but not yet decided: every new version opens one. It is
// pending until a decision names its digest.
type Proposal struct {
	Server, Tool string
	Digest       Digest
	OpenedAt     time.Time
	// Crawl is the number of the crawl that opened it.
	Crawl int64
}

// CrawlRecord is everything one crawl writes: the crawl with its observations, the versions
// it saw first and the proposals they open.
type CrawlRecord struct {
	Crawl     Crawl
	Versions  []Version
	Proposals []Proposal
}

// DecisionKind is what a person decided about one digest of one tool.
type DecisionKind string

const (
	// DecisionApproved makes the digest the tool's one approved digest.
	DecisionApproved DecisionKind = "approved"
	// DecisionRejected refuses the digest; if it was the approved one, the tool has none.
	DecisionRejected DecisionKind = "rejected"
	// DecisionRolledBack makes an earlier approved digest the approved one again.
	DecisionRolledBack DecisionKind = "rolled_back"
)

// Decision is one human decision on one digest of one tool. Decisions are history.
type Decision struct {
	Server, Tool string
	Digest       Digest
	Kind         DecisionKind
	// Actor is the identity that decided; At when.
	Actor string
	At    time.Time
	// Expect is the tool's approved digest the decider read ("" for none): the decision is
	// written only if it is still the approved digest (check-and-set).
	Expect Digest
	// AcceptedSuspicious records that the decider accepted suspicious text in the version.
	AcceptedSuspicious bool
	// Note is free text from the decider.
	Note string
	// Statement and Signature are the decider's signed statement (canonical JSON) and
	// their OpenSSH signature over it (armored). They are stored in the audit entry, which
	// covers them with its hash; the port does not interpret them.
	Statement []byte
	Signature []byte
	// ReadHead, when set, is the audit head the decider read (and signed): the decision is
	// written only if it is still the head, so nobody approves against a log they have not
	// seen. Nil chains from whatever the head is.
	ReadHead *AuditHead
	// Policy, on an approval made by a review policy (Actor "policy:NAME"), names the
	// policy and what it accepted. Like Statement it is stored in the audit entry only.
	Policy *PolicyApproval
}

// Approval is a tool's current approved digest.
type Approval struct {
	Server, Tool string
	Digest       Digest
	By           string
	At           time.Time
}

// ToolRecord is what the catalog knows about one tool at one moment, read consistently.
//
// Crawl and gateway records combine by record number: a tool's current observation is
// the one in the most recently recorded crawl record, of either source, that observed the
// tool (docs/toolwarrant.md, "Crawls and gateway observations").
type ToolRecord struct {
	Server, Tool string
	// LastCrawl is the number of the last crawl record of the server, of either source,
	// that observed this tool; ServerLastCrawl is the number of the server's last crawl
	// with Source SourceCrawl (Server.LastSourceCrawl). A tool is listed while LastCrawl >=
	// ServerLastCrawl: only a crawl removes a tool, and a gateway observation after that
	// crawl lists it again.
	LastCrawl, ServerLastCrawl int64
	// Current is the digest that record observed; empty if it refused the tool (Refused).
	Current Digest
	Refused string
	// CurrentSource is the Source of that record ("" when no record observed the tool).
	// A Current observed only by the gateway may have no version yet.
	CurrentSource Source
	// Previous is the last digest a SourceCrawl record observed that differs from Current
	// (so it always has a version); empty if none.
	Previous Digest
	// Approved is the tool's approved digest, empty if none.
	Approved Digest
	// CurrentDecision is the latest decision on Current ("" if it has none: pending).
	CurrentDecision DecisionKind
	// Versions is how many versions the tool has: 0 for a tool observed only by the
	// gateway (Tools lists a tool once it has a version or a gateway observation with a
	// digest).
	Versions int
}

// State is a tool's state in `toolwarrant list`.
type State string

// States, in the order an operator cares about them.
// "The last observation" is ToolRecord.Current: the most recently recorded crawl or
// gateway observation of the tool.
const (
	// StateApproved: the last observation is the approved digest.
	StateApproved State = "APPROVED"
	// StateDrift: the tool has an approved digest, and the last observation is another one
	// (or refused the definition).
	StateDrift State = "DRIFT"
	// StatePending: no approved digest, and the last digest observed is undecided.
	StatePending State = "PENDING"
	// StateRejected: no approved digest, and the last digest observed was rejected.
	StateRejected State = "REJECTED"
	// StateRefused: no approved digest, and the last observation refused the definition.
	StateRefused State = "REFUSED"
	// StateRemoved: the server's last crawl did not list the tool, and no gateway
	// observation since did.
	StateRemoved State = "REMOVED"
)

// Listed reports whether the tool was observed by the server's last crawl or by a
// gateway record after it: whether Current is the tool's current definition.
func (r ToolRecord) Listed() bool { return r.LastCrawl >= r.ServerLastCrawl }

// State derives the tool's state.
func (r ToolRecord) State() State {
	switch {
	case !r.Listed():
		return StateRemoved
	case r.Approved != "" && r.Current == r.Approved:
		return StateApproved
	case r.Approved != "":
		return StateDrift
	case r.Current == "":
		return StateRefused
	case r.CurrentDecision == DecisionRejected:
		return StateRejected
	default:
		return StatePending
	}
}

// Pending reports whether the last digest seen is undecided.
func (r ToolRecord) Pending() bool {
	return r.Current != "" && r.CurrentDecision == "" && r.Listed()
}

// Baseline is the digest the current one is graded against: the approved digest, else the
// previous one observed; empty for a tool with one version and no approval.
func (r ToolRecord) Baseline() Digest {
	if r.Approved != "" {
		return r.Approved
	}
	return r.Previous
}

// VersionKey names one version.
type VersionKey struct {
	Server, Tool string
	Digest       Digest
}
