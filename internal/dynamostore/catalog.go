package dynamostore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentgate-dev/agentgate/internal/blob"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

var _ warrant.Catalog = (*Catalog)(nil)

// CatalogFormatVersion is the data-model version in the catalog table's SCHEMA item.
const CatalogFormatVersion = "catalog/1"

// Limits of the catalog driver (DynamoDB's: 400 KB per item, 100 actions per transaction;
// the byte limits are in catalog_blob.go).
const (
	// maxTxItems is DynamoDB's limit of actions in one TransactWriteItems.
	maxTxItems = 100
	// chunkBytes bounds the JSON packed into one item (observations, audit records).
	chunkBytes = 300 << 10
	// maxPages bounds every paginated Query.
	maxPages = 10000
)

// CatalogConfig configures NewCatalog.
type CatalogConfig struct {
	// Client is the DynamoDB client. Required.
	Client API
	// Table is the catalog table's name (template.yaml CatalogTable; CATALOG_TABLE).
	// Required.
	Table string
	// MaxTxAttempts bounds how often a write cancelled only by a TransactionConflict or a
	// throttled item (nothing was written) is re-sent, after a jittered pause. Default 4.
	MaxTxAttempts int
	// Backoff is the base pause between such attempts. Default 25ms (doubling, jittered).
	Backoff time.Duration
	// Rand is the source of write IDs. Default crypto/rand.Reader.
	Rand io.Reader
	// Logger receives warnings. Default: discard.
	Logger *slog.Logger
	// Blobs stores the payloads too large for an item — a version's canonical bytes, a
	// server's index, a crawl's observations — by content digest (template.yaml's
	// CatalogBlobBucket; CATALOG_BLOB_BUCKET). Optional: without it, such a payload is
	// refused with ErrInvalid (nothing written), and an item that names an object cannot
	// be read.
	Blobs blob.Store
	// MaxBlobBytes bounds one object written to Blobs (ErrInvalid above it); configure the
	// store to read as much (s3blob.Config.MaxObjectBytes). Default DefaultMaxBlobBytes.
	MaxBlobBytes int64
	// Sequencer, when set, turns on sequenced appends (AppendEvents, Sequence): events that
	// accompany no other write are queued and integrated in batches, one head update per
	// batch (catalog.md, "Sequenced appends"). Nil: AppendEvents is refused.
	Sequencer *SequencerConfig
}

// Catalog is the DynamoDB implementation of warrant.Catalog (catalog.md). It is
// safe for concurrent use: every write is one conditional TransactWriteItems.
type Catalog struct {
	db       API
	table    *string
	attempts int
	backoff  time.Duration
	rand     io.Reader
	log      *slog.Logger
	blobs    blob.Store
	maxBlob  int64
	idxCache indexCache
	seq      *sequencer
	// marked is set once the table is known to hold this version's format marker: read at
	// construction, or written by a transaction of ours. Until then every write
	// transaction carries the marker (see markerItem).
	marked atomic.Bool
}

// NewCatalog checks the table's format marker with one consistent GetItem and returns the
// catalog. It never writes: a table without the marker is a new, empty catalog, and the
// marker is written by the first write transaction (so roles that may only read the
// table — the checkpoint function, the ExtMcp container — can open it before anything
// was written). A table recording another format is refused, here or, if the marker
// appears later, by that write.
func NewCatalog(ctx context.Context, cfg CatalogConfig) (*Catalog, error) {
	if cfg.Client == nil || cfg.Table == "" {
		return nil, errors.New("dynamostore: CatalogConfig.Client and Table are required")
	}
	c := &Catalog{db: cfg.Client, table: aws.String(cfg.Table), attempts: cfg.MaxTxAttempts, backoff: cfg.Backoff, rand: cfg.Rand, log: cfg.Logger,
		blobs: cfg.Blobs, maxBlob: cfg.MaxBlobBytes}
	if c.maxBlob <= 0 {
		c.maxBlob = DefaultMaxBlobBytes
	}
	if c.attempts <= 0 {
		c.attempts = 4
	}
	if c.backoff <= 0 {
		c.backoff = 25 * time.Millisecond
	}
	if c.rand == nil {
		c.rand = rand.Reader
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	seq, err := newSequencer(cfg.Sequencer)
	if err != nil {
		return nil, err
	}
	c.seq = seq
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: c.table, Key: keyOf(pkSchema, pkSchema), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, cclassify("read format marker of "+cfg.Table, err)
	}
	if out.Item != nil {
		if v := sval(out.Item, "version"); v != CatalogFormatVersion {
			return nil, foreignFormat(cfg.Table, v)
		}
		c.marked.Store(true)
	}
	return c, nil
}

func foreignFormat(table, v string) error {
	return fmt.Errorf("dynamostore: table %s records format %q, not %q: it is not a toolwarrant catalog of this version", table, v, CatalogFormatVersion)
}

// markerItem is the format marker's put, carried by every write transaction until one
// commits: created if absent, kept if it records this version, and the whole write
// cancelled if it records another (a table of another format, or of a later version,
// is never written by this one). Nil once the marker is known to be there.
func (c *Catalog) markerItem() *txItem {
	if c.marked.Load() {
		return nil
	}
	return &txItem{role: roleMarker, item: types.TransactWriteItem{Put: &types.Put{TableName: c.table,
		Item:                                with(keyOf(pkSchema, pkSchema), "version", str(CatalogFormatVersion)),
		ConditionExpression:                 aws.String("attribute_not_exists(pk) OR version = :v"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":v": str(CatalogFormatVersion)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}}
}

// Keys.
const (
	pkServers   = "SERVERS"
	pkApprovals = "APPROVALS"
	pkAudit     = "AUDIT"
	skHead      = "HEAD"
	skIndex     = "INDEX"
)

func pkServer(name string) string { return "SRV#" + name }
func skServer(name string) string { return "SRV#" + name }
func skCrawl(seq int64) string    { return fmt.Sprintf("CRAWL#%012d", seq) }
func skVersion(tool string, d warrant.Digest) string {
	return "VER#" + tool + "#" + string(d)
}
func skDecision(tool string, n int64) string { return fmt.Sprintf("DEC#%s#%09d", tool, n) }
func skApproval(server, tool string) string  { return server + "#" + tool }
func skRecords(last int64) string            { return fmt.Sprintf("REC#%012d", last) }

// Attribute helpers.
func bin(b []byte) types.AttributeValue   { return &types.AttributeValueMemberB{Value: b} }
func boolean(b bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: b} }

func keyOf(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(pk), "sk": str(sk)}
}

func with(m map[string]types.AttributeValue, kv ...any) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(types.AttributeValue)
	}
	return out
}

func sval(item map[string]types.AttributeValue, k string) string {
	if v, ok := item[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func nval(item map[string]types.AttributeValue, k string) int64 {
	if v, ok := item[k].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func bval(item map[string]types.AttributeValue, k string) []byte {
	if v, ok := item[k].(*types.AttributeValueMemberB); ok {
		return v.Value
	}
	return nil
}

func boolval(item map[string]types.AttributeValue, k string) bool {
	v, ok := item[k].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

func tstr(t time.Time) types.AttributeValue { return str(t.UTC().Format(time.RFC3339Nano)) }

func tval(item map[string]types.AttributeValue, k string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, sval(item, k))
	return t.UTC()
}

// ---- reads ----

func (c *Catalog) get(ctx context.Context, op, pk, sk string) (map[string]types.AttributeValue, error) {
	out, err := c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: c.table, Key: keyOf(pk, sk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, cclassify(op, err)
	}
	return out.Item, nil
}

// query returns the items of pk whose sort key begins with prefix (or lies in [from, to]
// when to is set), in sort key order, following pages (at most maxPages).
func (c *Catalog) query(ctx context.Context, op, pk, prefix, from, to string) ([]map[string]types.AttributeValue, error) {
	in := &dynamodb.QueryInput{TableName: c.table, ConsistentRead: aws.Bool(true)}
	if to != "" {
		in.KeyConditionExpression = aws.String("pk = :pk AND sk BETWEEN :a AND :b")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":pk": str(pk), ":a": str(from), ":b": str(to)}
	} else if prefix == "" {
		in.KeyConditionExpression = aws.String("pk = :pk")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":pk": str(pk)}
	} else {
		in.KeyConditionExpression = aws.String("pk = :pk AND begins_with(sk, :p)")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":pk": str(pk), ":p": str(prefix)}
	}
	var items []map[string]types.AttributeValue
	for range maxPages {
		out, err := c.db.Query(ctx, in)
		if err != nil {
			return nil, cclassify(op, err)
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	return nil, fmt.Errorf("%s: more than %d pages", op, maxPages)
}

func headersJSON(h []warrant.HeaderRef) string {
	if h == nil {
		h = []warrant.HeaderRef{}
	}
	b, _ := json.Marshal(h)
	return string(b)
}

func serverOf(item map[string]types.AttributeValue) warrant.Server {
	s := warrant.Server{Name: sval(item, "name"), URL: sval(item, "url"), AllowPrivate: boolval(item, "allow_private"),
		AddedAt: tval(item, "added_at"), AddedBy: sval(item, "added_by"), LastCrawl: nval(item, "last_crawl"), LastSourceCrawl: nval(item, "last_source_crawl")}
	_ = json.Unmarshal([]byte(sval(item, "headers")), &s.Headers)
	if len(s.Headers) == 0 {
		s.Headers = nil
	}
	s.Package = pinOf(item)
	return s
}

// Server implements warrant.Catalog: one GetItem.
func (c *Catalog) Server(ctx context.Context, name string) (warrant.Server, error) {
	if warrant.ValidateServerName(name) != nil {
		return warrant.Server{}, fmt.Errorf("server %q: %w", name, warrant.ErrNotFound)
	}
	item, err := c.get(ctx, "read server "+name, pkServers, skServer(name))
	if err != nil {
		return warrant.Server{}, err
	}
	if item == nil {
		return warrant.Server{}, fmt.Errorf("server %q: %w", name, warrant.ErrNotFound)
	}
	return serverOf(item), nil
}

// Servers implements warrant.Catalog: one Query of the SERVERS partition.
func (c *Catalog) Servers(ctx context.Context) ([]warrant.Server, error) {
	items, err := c.query(ctx, "list servers", pkServers, "SRV#", "", "")
	if err != nil {
		return nil, err
	}
	out := make([]warrant.Server, 0, len(items))
	for _, it := range items {
		out = append(out, serverOf(it))
	}
	slices.SortFunc(out, func(a, b warrant.Server) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// index reads a server's index (SRV#name/INDEX: the domain's warrant.Index, written by
// the crawls that change it, in their transaction, and by no other write): one GetItem,
// and one object from the blob store when it is kept there and not in the cache (objects
// are immutable: a cached one is current as long as the item names it).
func (c *Catalog) index(ctx context.Context, server string) (*warrant.Index, error) {
	op := "read index of " + server
	item, err := c.get(ctx, op, pkServer(server), skIndex)
	if err != nil {
		return nil, err
	}
	ix := warrant.NewIndex()
	if item == nil {
		return ix, nil
	}
	key := sval(item, "blob")
	raw := c.idxCache.get(key)
	if raw == nil {
		if raw, err = c.load(ctx, op, item, "idx"); err != nil {
			return nil, err
		}
		if key != "" {
			c.idxCache.put(key, raw)
		}
	}
	if err := json.Unmarshal(raw, ix); err != nil {
		return nil, fmt.Errorf("%s: %v", op, err)
	}
	return ix, nil
}

func obsJSON(obs []warrant.Observation) []byte {
	type o struct {
		T string         `json:"t"`
		D warrant.Digest `json:"d,omitempty"`
		R string         `json:"r,omitempty"`
	}
	out := make([]o, len(obs))
	for i, x := range obs {
		out[i] = o{x.Tool, x.Digest, x.Refused}
	}
	b, _ := json.Marshal(out)
	return b
}

// Crawl implements warrant.Catalog: one Query (the crawl item and its chunks).
func (c *Catalog) Crawl(ctx context.Context, server string, seq int64) (warrant.Crawl, error) {
	if warrant.ValidateServerName(server) != nil || seq < 1 {
		return warrant.Crawl{}, fmt.Errorf("crawl %s #%d: %w", server, seq, warrant.ErrNotFound)
	}
	items, err := c.query(ctx, "read crawl", pkServer(server), skCrawl(seq), "", "")
	if err != nil {
		return warrant.Crawl{}, err
	}
	if len(items) == 0 {
		return warrant.Crawl{}, fmt.Errorf("crawl %s #%d: %w", server, seq, warrant.ErrNotFound)
	}
	head := items[0]
	cr := warrant.Crawl{Server: server, Seq: seq, Source: warrant.Source(sval(head, "source")), StartedAt: tval(head, "started_at"),
		FinishedAt: tval(head, "finished_at"), By: sval(head, "by"), Observations: []warrant.Observation{}}
	// The observations are in the head item, in the blob store (the head names the
	// object), or, as written before the blob store, in chunks CRAWL#<seq>#<k>.
	var raw []byte
	if sval(head, "blob") != "" {
		if raw, err = c.load(ctx, fmt.Sprintf("read crawl %s #%d", server, seq), head, "obs"); err != nil {
			return warrant.Crawl{}, err
		}
	} else {
		for _, it := range items {
			raw = append(raw, bval(it, "obs")...)
		}
	}
	var obs []struct {
		T string         `json:"t"`
		D warrant.Digest `json:"d"`
		R string         `json:"r"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &obs); err != nil {
			return warrant.Crawl{}, fmt.Errorf("read crawl %s #%d: %v", server, seq, err)
		}
	}
	for _, o := range obs {
		cr.Observations = append(cr.Observations, warrant.Observation{Tool: o.T, Digest: o.D, Refused: o.R})
	}
	return cr, nil
}

// versionOf reads the version an item holds: its canonical bytes inline or from the blob
// store, checked against the version's digest either way (bytes that are not the
// digest's are an error, never served).
func (c *Catalog) versionOf(ctx context.Context, server string, item map[string]types.AttributeValue) (warrant.Version, error) {
	v := warrant.Version{Server: server, Tool: sval(item, "tool"), Digest: warrant.Digest(sval(item, "digest")),
		FirstSeenAt: tval(item, "first_seen_at"), FirstSeenBy: sval(item, "first_seen_by"), FirstCrawl: nval(item, "first_crawl")}
	op := fmt.Sprintf("read version %s/%s %s", server, v.Tool, v.Digest)
	b, err := c.load(ctx, op, item, "canonical")
	if err != nil {
		return warrant.Version{}, err
	}
	if warrant.DigestOf(b) != v.Digest {
		return warrant.Version{}, fmt.Errorf("%s: the stored bytes hash to %s: the version was altered or damaged, and is not served", op, warrant.DigestOf(b))
	}
	v.Canonical = b
	return v, nil
}

// toolKeyOK reports whether tool can be part of a sort key (warrant.MaxToolNameBytes is
// below DynamoDB's bound on a key).
func toolKeyOK(tool string) bool { return warrant.ValidToolName(tool) }

// Version implements warrant.Catalog: one GetItem, and one object read from the blob
// store for a version kept there.
func (c *Catalog) Version(ctx context.Context, server, tool string, d warrant.Digest) (warrant.Version, error) {
	item, err := c.versionItem(ctx, server, tool, d)
	if err != nil {
		return warrant.Version{}, err
	}
	return c.versionOf(ctx, server, item)
}

// versionItem returns a visible version's item (its bytes not read): ErrNotFound for no
// item, or for a staged one the server's index does not list.
func (c *Catalog) versionItem(ctx context.Context, server, tool string, d warrant.Digest) (map[string]types.AttributeValue, error) {
	if warrant.ValidateServerName(server) != nil || !toolKeyOK(tool) || !d.Valid() {
		return nil, fmt.Errorf("version %s/%s %s: %w", server, tool, d, warrant.ErrNotFound)
	}
	item, err := c.get(ctx, "read version", pkServer(server), skVersion(tool, d))
	if err != nil {
		return nil, err
	}
	if item != nil && boolval(item, "staged") {
		ix, err := c.index(ctx, server)
		if err != nil {
			return nil, err
		}
		if !ix.HasVersion(tool, d) {
			item = nil // an orphan of a crawl that failed
		}
	}
	if item == nil {
		return nil, fmt.Errorf("version %s/%s %s: %w", server, tool, d, warrant.ErrNotFound)
	}
	return item, nil
}

// Versions implements warrant.Catalog: one Query of the tool's version items, and one
// object read from the blob store for each version kept there.
func (c *Catalog) Versions(ctx context.Context, server, tool string) ([]warrant.Version, error) {
	out := []warrant.Version{}
	if warrant.ValidateServerName(server) != nil || !toolKeyOK(tool) {
		return out, nil //nolint:nilerr // a name that cannot be stored names nothing: an empty answer
	}
	items, err := c.query(ctx, "list versions", pkServer(server), "VER#"+tool+"#", "", "")
	if err != nil {
		return nil, err
	}
	var ix *warrant.Index
	for _, it := range items {
		if sval(it, "tool") != tool { // another tool's name may extend this one's past '#'
			continue
		}
		if boolval(it, "staged") {
			if ix == nil {
				if ix, err = c.index(ctx, server); err != nil {
					return nil, err
				}
			}
			if !ix.HasVersion(tool, warrant.Digest(sval(it, "digest"))) {
				continue // an orphan of a crawl that failed
			}
		}
		v, err := c.versionOf(ctx, server, it)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b warrant.Version) int {
		if a.FirstCrawl != b.FirstCrawl {
			return int(a.FirstCrawl - b.FirstCrawl)
		}
		return a.FirstSeenAt.Compare(b.FirstSeenAt)
	})
	return out, nil
}

// VersionKeys implements warrant.Catalog: one GetItem of the server's index.
func (c *Catalog) VersionKeys(ctx context.Context, server string) ([]warrant.VersionKey, error) {
	if warrant.ValidateServerName(server) != nil {
		return []warrant.VersionKey{}, nil //nolint:nilerr // a name that cannot be stored names nothing: an empty answer
	}
	ix, err := c.index(ctx, server)
	if err != nil {
		return nil, err
	}
	return ix.VersionKeys(server), nil
}

// approvalOf reads one tool's APPROVALS item: the domain's warrant.ApprovalState
// (approved, by, at; n decisions; kinds, the latest per digest), written by every
// decision on the tool.
func approvalOf(item map[string]types.AttributeValue) warrant.ApprovalState {
	if item == nil {
		return warrant.ApprovalState{}
	}
	a := warrant.ApprovalState{Approved: warrant.Digest(sval(item, "approved")), By: sval(item, "by"), Decisions: nval(item, "n")}
	if sval(item, "at") != "" {
		a.At = tval(item, "at")
	}
	_ = json.Unmarshal([]byte(sval(item, "kinds")), &a.Latest)
	return a
}

// approvals reads the APPROVALS partition, or only server's items when server is set:
// server → tool → state.
func (c *Catalog) approvals(ctx context.Context, server string) (map[string]map[string]warrant.ApprovalState, error) {
	prefix := ""
	if server != "" {
		prefix = server + "#" // server names hold no '#': the prefix is the server's alone
	}
	items, err := c.query(ctx, "list approvals", pkApprovals, prefix, "", "")
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]warrant.ApprovalState{}
	for _, it := range items {
		srv, tool := sval(it, "server"), sval(it, "tool")
		if out[srv] == nil {
			out[srv] = map[string]warrant.ApprovalState{}
		}
		out[srv][tool] = approvalOf(it)
	}
	return out, nil
}

// Tools implements warrant.Catalog: one Query of the servers (which carry each server's
// last SourceCrawl), one Query of the approvals and one GetItem of each server's index.
// A tool is listed once it has a version or a gateway record observed a digest of it.
// The reads are strongly consistent but not one snapshot: a decision or crawl committed
// between them shows in one and not the other (the service re-reads before any write,
// and every write is check-and-set).
func (c *Catalog) Tools(ctx context.Context) ([]warrant.ToolRecord, error) {
	out := []warrant.ToolRecord{}
	err := c.eachIndex(ctx, func(s warrant.Server, ix *warrant.Index, aps map[string]warrant.ApprovalState) {
		out = append(out, ix.Records(s.Name, s.LastSourceCrawl, aps)...)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachIndex reads the servers (1 Query), the approvals (1 Query) and each server's index
// (1 GetItem each), and calls fn per server in name order.
func (c *Catalog) eachIndex(ctx context.Context, fn func(warrant.Server, *warrant.Index, map[string]warrant.ApprovalState)) error {
	servers, err := c.Servers(ctx)
	if err != nil {
		return err
	}
	aps, err := c.approvals(ctx, "")
	if err != nil {
		return err
	}
	for _, s := range servers {
		ix, err := c.index(ctx, s.Name)
		if err != nil {
			return err
		}
		fn(s, ix, aps[s.Name])
	}
	return nil
}

// ServerTools implements warrant.Catalog: one GetItem of the server, one of its index and
// one Query of its approvals (the APPROVALS items whose sort key begins with
// "<server>#"), however many servers the catalog holds.
func (c *Catalog) ServerTools(ctx context.Context, server string) ([]warrant.ToolRecord, error) {
	srv, err := c.Server(ctx, server)
	if err != nil {
		return nil, err
	}
	ix, err := c.index(ctx, server)
	if err != nil {
		return nil, err
	}
	aps, err := c.approvals(ctx, server)
	if err != nil {
		return nil, err
	}
	return ix.Records(server, srv.LastSourceCrawl, aps[server]), nil
}

// Proposals implements warrant.Catalog: the servers, their indexes and the approvals.
func (c *Catalog) Proposals(ctx context.Context) ([]warrant.Proposal, error) {
	out := []warrant.Proposal{}
	err := c.eachIndex(ctx, func(s warrant.Server, ix *warrant.Index, aps map[string]warrant.ApprovalState) {
		out = append(out, ix.Pending(s.Name, aps)...)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Decisions implements warrant.Catalog: one Query of the tool's decision items.
func (c *Catalog) Decisions(ctx context.Context, server, tool string) ([]warrant.Decision, error) {
	out := []warrant.Decision{}
	if warrant.ValidateServerName(server) != nil || !toolKeyOK(tool) {
		return out, nil //nolint:nilerr // a name that cannot be stored names nothing: an empty answer
	}
	items, err := c.query(ctx, "list decisions", pkServer(server), "DEC#"+tool+"#", "", "")
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if sval(it, "tool") != tool {
			continue
		}
		out = append(out, warrant.Decision{Server: server, Tool: tool, Digest: warrant.Digest(sval(it, "digest")), Kind: warrant.DecisionKind(sval(it, "kind")),
			Actor: sval(it, "actor"), At: tval(it, "at"), Expect: warrant.Digest(sval(it, "expect")), AcceptedSuspicious: boolval(it, "accepted_suspicious"),
			Note: sval(it, "note")})
	}
	return out, nil
}

// Approvals implements warrant.Catalog: one Query of the APPROVALS partition.
func (c *Catalog) Approvals(ctx context.Context) ([]warrant.Approval, error) {
	aps, err := c.approvals(ctx, "")
	if err != nil {
		return nil, err
	}
	return warrant.Approvals(aps), nil
}

// AuditHead implements warrant.Catalog: one GetItem.
func (c *Catalog) AuditHead(ctx context.Context) (warrant.AuditHead, error) {
	item, err := c.get(ctx, "read audit head", pkAudit, skHead)
	if err != nil {
		return warrant.AuditHead{}, err
	}
	if item == nil {
		return warrant.Genesis(), nil
	}
	return warrant.AuditHead{Seq: nval(item, "seq"), Hash: sval(item, "hash")}, nil
}

// recordJSON is one audit record inside a REC# item.
type recordJSON struct {
	Seq       int64  `json:"n"`
	Type      string `json:"t"`
	Actor     string `json:"a"`
	At        string `json:"at"`
	PrevHash  string `json:"p"`
	Hash      string `json:"h"`
	Body      []byte `json:"b"`
	KeyID     string `json:"k"`
	Signature []byte `json:"s"`
}

// AuditRecords implements warrant.Catalog: Query pages of REC# items (each holds the
// records of one write, keyed by its last seq) from the one holding after+1.
func (c *Catalog) AuditRecords(ctx context.Context, after int64, limit int) ([]warrant.AuditRecord, error) {
	out := []warrant.AuditRecord{}
	if limit <= 0 {
		return out, nil
	}
	in := &dynamodb.QueryInput{TableName: c.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk AND sk BETWEEN :a AND :b"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pkAudit), ":a": str(skRecords(after + 1)), ":b": str("REC#999999999999")},
		Limit:                     aws.Int32(int32(min(limit, 100)))}
	for range maxPages {
		page, err := c.db.Query(ctx, in)
		if err != nil {
			return nil, cclassify("read audit records", err)
		}
		for _, it := range page.Items {
			var recs []recordJSON
			if err := json.Unmarshal(bval(it, "recs"), &recs); err != nil {
				return nil, fmt.Errorf("read audit records: %v", err)
			}
			for _, r := range recs {
				if r.Seq <= after {
					continue
				}
				at, _ := time.Parse(time.RFC3339Nano, r.At)
				out = append(out, warrant.AuditRecord{Seq: r.Seq, Type: r.Type, Actor: r.Actor, At: at.UTC(), PrevHash: r.PrevHash, Hash: r.Hash,
					Body: r.Body, KeyID: r.KeyID, Signature: r.Signature})
				if len(out) == limit {
					return out, nil
				}
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	return out, nil
}
