package dynamostore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/dynamostore"
	"github.com/agentgate-dev/agentgate/internal/s3blob"
	"github.com/agentgate-dev/agentgate/internal/s3blob/s3test"
	"github.com/agentgate-dev/agentgate/internal/warrant"
	"github.com/agentgate-dev/agentgate/internal/warrant/catalogtest"
)

// DynamoDB's limits, as its documentation states them: what the harness's limits layer
// also refuses.
const (
	dynamoItemBytes = 400 << 10
	dynamoTxItems   = 100
	dynamoTxBytes   = 4_000_000 // "4 MB", read as the smaller of 4·10⁶ and 4·2²⁰
)

// stack is one catalog table and (optionally) blob bucket on the test endpoint.
type stack struct {
	cfg    aws.Config
	table  string
	bucket string // "" without a blob store
}

func newStack(t *testing.T, blobs bool) *stack {
	t.Helper()
	st := &stack{cfg: awstest.Config(t)}
	st.table = awstest.CreateTable(t, st.cfg, "CatalogTable")
	if blobs {
		st.bucket = s3test.CreateVersionedBucket(t, st.cfg)
	}
	return st
}

// catalog opens the stack's catalog with extra client options (counters, faults).
func (st *stack) catalog(t *testing.T, dyn []func(*dynamodb.Options), s3o []func(*s3.Options)) *dynamostore.Catalog {
	t.Helper()
	cc := dynamostore.CatalogConfig{Client: dynamodb.NewFromConfig(st.cfg, dyn...), Table: st.table}
	if st.bucket != "" {
		b, err := s3blob.New(s3blob.Config{Client: s3test.Client(st.cfg, s3o...), Bucket: st.bucket, MaxObjectBytes: dynamostore.DefaultMaxBlobBytes})
		if err != nil {
			t.Fatal(err)
		}
		cc.Blobs = b
	}
	c, err := dynamostore.NewCatalog(t.Context(), cc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// objects lists the bucket's catalog objects.
func (st *stack) objects(t *testing.T) []string {
	t.Helper()
	out, err := s3test.Client(st.cfg).ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(st.bucket), Prefix: aws.String("catalog/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// overwrite replaces an object behind the catalog's back, as someone who can write the
// bucket could.
func (st *stack) overwrite(t *testing.T, key string, data []byte) {
	t.Helper()
	if _, err := s3test.Client(st.cfg).PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(st.bucket), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
}

// item reads one item of the table directly.
func (st *stack) item(t *testing.T, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := dynamodb.NewFromConfig(st.cfg).GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(st.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func sattr(item map[string]types.AttributeValue, k string) string {
	v, _ := item[k].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

// limits measures every write request the way DynamoDB limits it — a transaction's
// actions and the aggregate size of its items, each put item's size — with its own
// reading of DynamoDB's size rules (attribute names plus values), independent of the
// driver's.
type limits struct {
	mu         sync.Mutex
	txs        []string // "<items> items, <bytes> bytes" per TransactWriteItems
	maxTxBytes int
	violations []string
}

func valueSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return (len(strings.TrimLeft(x.Value, "-0"))+1)/2 + 1
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + valueSize(e)
		}
		return n
	}
	return 0
}

func sizeOf(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func (l *limits) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("limits",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			l.mu.Lock()
			switch p := in.Parameters.(type) {
			case *dynamodb.TransactWriteItemsInput:
				size := 0
				for _, it := range p.TransactItems {
					switch {
					case it.Put != nil:
						if s := sizeOf(it.Put.Item); s > dynamoItemBytes {
							l.violations = append(l.violations, fmt.Sprintf("a transaction puts an item of %d bytes", s))
						}
						size += sizeOf(it.Put.Item)
					case it.Update != nil:
						size += sizeOf(it.Update.Key)
						for _, v := range it.Update.ExpressionAttributeValues {
							size += valueSize(v)
						}
					case it.ConditionCheck != nil:
						size += sizeOf(it.ConditionCheck.Key)
					}
				}
				l.txs = append(l.txs, fmt.Sprintf("%d items, %d bytes", len(p.TransactItems), size))
				l.maxTxBytes = max(l.maxTxBytes, size)
				if len(p.TransactItems) > dynamoTxItems || size > dynamoTxBytes {
					l.violations = append(l.violations, fmt.Sprintf("TransactWriteItems of %d items and %d bytes", len(p.TransactItems), size))
				}
			case *dynamodb.PutItemInput:
				if s := sizeOf(p.Item); s > dynamoItemBytes {
					l.violations = append(l.violations, fmt.Sprintf("PutItem of %d bytes", s))
				}
			}
			l.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

func (l *limits) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range l.violations {
		t.Errorf("beyond DynamoDB's limits: %s", v)
	}
	t.Logf("transactions: %v (largest %d bytes)", l.txs, l.maxTxBytes)
}

// crash fails the at-th call of op before it is sent, as a process that dies there would
// leave things (the error is not retryable).
type crash struct {
	op string
	at int64
	n  atomic.Int64
}

var errCrash = errors.New("test: crashed before sending")

func (c *crash) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("crash",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if middleware.GetOperationName(ctx) == c.op && c.n.Add(1) == c.at {
				return middleware.InitializeOutput{}, middleware.Metadata{}, errCrash
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

func dynOpt(mw func(*middleware.Stack) error) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, mw) }
}

func s3Opt(mw func(*middleware.Stack) error) func(*s3.Options) {
	return func(o *s3.Options) { o.APIOptions = append(o.APIOptions, mw) }
}

// issueSizes is the crawl of issue 14: one server with 60 tools of ~73 KB.
func issueSizes() map[string]int {
	sizes := map[string]int{}
	for i := range 60 {
		sizes[fmt.Sprintf("tool_%02d", i)] = 73<<10 + i
	}
	return sizes
}

// firstCrawl records crawl 1 of a new server "big" with its audit records, and returns it.
func firstCrawl(t *testing.T, c warrant.Catalog, sizes map[string]int) (warrant.CrawlRecord, error) {
	t.Helper()
	ctx := t.Context()
	if err := c.AddServer(ctx, warrant.Server{Name: "big", URL: "https://big.example.com/mcp"}, warrant.AuditAppend{}); err != nil {
		t.Fatal(err)
	}
	rec := catalogtest.LargeCrawl("big", 1, nil, sizes)
	head, err := c.AuditHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rec, c.RecordCrawl(ctx, rec, warrant.AuditAppend{Prev: head, Records: catalogtest.Records(head, 1+len(rec.Versions), warrant.EventVersionRecorded)})
}

func checkVersions(t *testing.T, c warrant.Catalog, rec warrant.CrawlRecord) {
	t.Helper()
	for _, v := range rec.Versions {
		got, err := c.Version(t.Context(), v.Server, v.Tool, v.Digest)
		if err != nil || !bytes.Equal(got.Canonical, v.Canonical) {
			t.Errorf("Version(%s) = %d bytes, %v; want its %d bytes", v.Tool, len(got.Canonical), err, len(v.Canonical))
		}
	}
	keys, err := c.VersionKeys(t.Context(), rec.Crawl.Server)
	if err != nil || len(keys) != len(rec.Versions) {
		t.Errorf("VersionKeys = %d, %v; want %d", len(keys), err, len(rec.Versions))
	}
}

// TestCatalogTransactionLimits: the crawl of issue 14 — 60 tools of ~73 KB in one first
// crawl, 4.4 MB of definitions — is recorded within DynamoDB's limits, every transaction
// at most 100 items and 4 MB and every item at most 400 KB: split by bytes without a blob
// store (the versions that do not fit are staged), kept small with one (the definitions go
// to S3), where one of 2 MB is stored too. The old driver sent it as one transaction of
// 5.99 MB, which DynamoDB refuses, on this crawl and every later one.
func TestCatalogTransactionLimits(t *testing.T) {
	t.Run("NoBlobStore", func(t *testing.T) {
		lim, calls := &limits{}, awstest.NewCalls()
		c := newStack(t, false).catalog(t, []func(*dynamodb.Options){dynOpt(lim.Middleware), dynOpt(calls.Middleware)}, nil)
		rec, err := firstCrawl(t, c, issueSizes())
		if err != nil {
			t.Fatal(err)
		}
		lim.check(t)
		if got := calls.Take(); got["PutItem"] == 0 {
			t.Errorf("calls %v: no version was staged, so the transaction was not split by bytes", got)
		}
		checkVersions(t, c, rec)
		sizes := issueSizes()
		known := map[string]bool{}
		for n := range sizes {
			known[n] = true
		}
		sizes["tool_60"] = 100 << 10
		if err := c.RecordCrawl(t.Context(), catalogtest.LargeCrawl("big", 2, known, sizes), warrant.AuditAppend{}); err != nil {
			t.Errorf("the next crawl of the server: %v", err)
		}
		lim.check(t)
	})
	t.Run("BlobStore", func(t *testing.T) {
		lim, calls, s3calls := &limits{}, awstest.NewCalls(), awstest.NewCalls()
		st := newStack(t, true)
		c := st.catalog(t, []func(*dynamodb.Options){dynOpt(lim.Middleware), dynOpt(calls.Middleware)}, []func(*s3.Options){s3Opt(s3calls.Middleware)})
		sizes := issueSizes()
		sizes["huge"] = 2 << 20
		rec, err := firstCrawl(t, c, sizes)
		if err != nil {
			t.Fatal(err)
		}
		lim.check(t)
		if got := calls.Take(); got["TransactWriteItems"] != 2 || got["PutItem"] != 0 {
			t.Errorf("calls %v: want the server's and the crawl's transactions only", got)
		}
		if got := s3calls.Take(); got["PutObject"] != 61 {
			t.Errorf("S3 calls %v: want one PutObject per definition over 32 KB", got)
		}
		if objs := st.objects(t); len(objs) != 61 {
			t.Errorf("%d objects in the bucket, want 61", len(objs))
		}
		checkVersions(t, c, rec)
	})
	t.Run("ManySmall", func(t *testing.T) {
		lim := &limits{}
		c := newStack(t, true).catalog(t, []func(*dynamodb.Options){dynOpt(lim.Middleware)}, nil)
		sizes := map[string]int{}
		for i := range 250 {
			sizes[fmt.Sprintf("tool_%03d", i)] = 2 << 10
		}
		rec, err := firstCrawl(t, c, sizes)
		if err != nil {
			t.Fatal(err)
		}
		lim.check(t)
		checkVersions(t, c, rec)
	})
}

// TestCatalogNoBlobStoreRefuses: without a blob store, a definition too large for an item
// is ErrInvalid naming its size and what to configure, and nothing is written.
func TestCatalogNoBlobStoreRefuses(t *testing.T) {
	calls := awstest.NewCalls()
	c := newStack(t, false).catalog(t, []func(*dynamodb.Options){dynOpt(calls.Middleware)}, nil)
	ctx := t.Context()
	if err := c.AddServer(ctx, warrant.Server{Name: "big", URL: "https://big.example.com/mcp"}, warrant.AuditAppend{}); err != nil {
		t.Fatal(err)
	}
	calls.Take()
	rec := catalogtest.LargeCrawl("big", 1, nil, map[string]int{"a": 1 << 10, "huge": 2 << 20})
	err := c.RecordCrawl(ctx, rec, warrant.AuditAppend{})
	if !errors.Is(err, warrant.ErrInvalid) || !strings.Contains(err.Error(), "2097152 bytes") || !strings.Contains(err.Error(), "CATALOG_BLOB_BUCKET") {
		t.Errorf("a 2 MB definition without a blob store: %v; want ErrInvalid naming its size and CATALOG_BLOB_BUCKET", err)
	}
	for op := range calls.Take() {
		if op != "GetItem" && op != "Query" {
			t.Errorf("the refused crawl called %s", op)
		}
	}
	if srv, _ := c.Server(ctx, "big"); srv.LastCrawl != 0 {
		t.Errorf("the refused crawl advanced LastCrawl to %d", srv.LastCrawl)
	}
}

// TestCatalogTamperedBlob: an object replaced in the bucket — a version's definition, a
// server's index, a crawl's observations — makes the reads that need it fail; its bytes
// are never served, and a write of the true bytes does not accept the altered object.
func TestCatalogTamperedBlob(t *testing.T) {
	st := newStack(t, true)
	ctx := t.Context()
	c := st.catalog(t, nil, nil)
	// Long names make the index and the observations large enough for the blob store.
	sizes := map[string]int{"huge": 100 << 10}
	for i := range 150 {
		sizes[fmt.Sprintf("tool_%03d_%s", i, strings.Repeat("x", 200))] = 1 << 10
	}
	rec, err := firstCrawl(t, c, sizes)
	if err != nil {
		t.Fatal(err)
	}
	huge := rec.Versions[0]
	if huge.Tool != "huge" {
		t.Fatalf("first version is %s", huge.Tool)
	}
	idxKey, obsKey := sattr(st.item(t, "SRV#big", "INDEX"), "blob"), sattr(st.item(t, "SRV#big", "CRAWL#000000000001"), "blob")
	if idxKey == "" || obsKey == "" {
		t.Fatalf("the index (%q) or the observations (%q) are not in the blob store", idxKey, obsKey)
	}
	verKey := "catalog/sha256/" + strings.TrimPrefix(string(huge.Digest), "sha256:")

	forged := bytes.Clone(huge.Canonical)
	copy(forged[len(forged)-40:], `"name":"huge","x":1}                    `)
	st.overwrite(t, verKey, forged)
	fresh := st.catalog(t, nil, nil)
	if v, err := fresh.Version(ctx, "big", "huge", huge.Digest); err == nil || errors.Is(err, warrant.ErrNotFound) || bytes.Equal(v.Canonical, forged) {
		t.Errorf("Version of a replaced object: %d bytes, %v; want an error", len(v.Canonical), err)
	}
	if _, err := fresh.Versions(ctx, "big", "huge"); err == nil {
		t.Error("Versions of a replaced object succeeded")
	}
	known := map[string]bool{}
	for n := range sizes {
		known[n] = n != "huge"
	}
	// A crawl that must write the true bytes finds the altered object and stops.
	if err := fresh.AddServer(ctx, warrant.Server{Name: "twin", URL: "https://twin.example.com/mcp"}, warrant.AuditAppend{}); err != nil {
		t.Fatal(err)
	}
	if err := fresh.RecordCrawl(ctx, catalogtest.LargeCrawl("twin", 1, nil, map[string]int{"huge": 100 << 10}), warrant.AuditAppend{}); err == nil {
		t.Error("a crawl writing the true bytes of an altered object succeeded")
	}

	st.overwrite(t, idxKey, []byte(`{"t":{}}`))
	fresh = st.catalog(t, nil, nil)
	if _, err := fresh.ServerTools(ctx, "big"); err == nil || errors.Is(err, warrant.ErrNotFound) {
		t.Errorf("ServerTools over a replaced index: %v; want an error", err)
	}
	if _, err := fresh.Tools(ctx); err == nil {
		t.Error("Tools over a replaced index succeeded")
	}
	if _, err := fresh.VersionKeys(ctx, "big"); err == nil {
		t.Error("VersionKeys over a replaced index succeeded")
	}
	st.overwrite(t, obsKey, []byte(`[]`))
	if _, err := fresh.Crawl(ctx, "big", 1); err == nil {
		t.Error("Crawl over replaced observations succeeded")
	}
}

// TestCatalogInterruptedCrawl: a crawl that stops after writing objects to the blob store —
// before its transaction, or between staging its versions — leaves nothing visible, and
// recording it again completes it with nothing twice; a crawl whose responses are lost
// after the requests were sent (retried by the SDK) is recorded once.
func TestCatalogInterruptedCrawl(t *testing.T) {
	sizes := map[string]int{}
	for i := range 150 {
		sizes[fmt.Sprintf("tool_%03d", i)] = 1 << 10
		if i%15 == 0 {
			sizes[fmt.Sprintf("tool_%03d", i)] = 50 << 10 // 10 of them go to the blob store
		}
	}
	verify := func(t *testing.T, st *stack, c *dynamostore.Catalog, rec warrant.CrawlRecord) {
		t.Helper()
		checkVersions(t, c, rec)
		if srv, err := c.Server(t.Context(), "big"); err != nil || srv.LastCrawl != 1 {
			t.Errorf("server = %+v, %v; want LastCrawl 1", srv, err)
		}
		if recs, err := c.AuditRecords(t.Context(), 0, 1000); err != nil || len(recs) != 1+len(rec.Versions) {
			t.Errorf("%d audit records, %v; want %d", len(recs), err, 1+len(rec.Versions))
		}
		// The 10 large definitions and the index, each once, and no other.
		if objs := st.objects(t); len(objs) != 11 || !slices.Contains(objs, sattr(st.item(t, "SRV#big", "INDEX"), "blob")) {
			t.Errorf("%d objects, want 11 (the definitions over 32 KB, the index): %v", len(objs), objs)
		}
		if props, err := c.Proposals(t.Context()); err != nil || len(props) != len(rec.Versions) {
			t.Errorf("%d proposals, %v", len(props), err)
		}
	}
	for _, tc := range []struct {
		name string
		op   string
		at   int64
	}{
		{"BeforeTheTransaction", "TransactWriteItems", 2}, // 1 is AddServer's
		{"BetweenStagedVersions", "PutItem", 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStack(t, true)
			crashing := st.catalog(t, []func(*dynamodb.Options){dynOpt((&crash{op: tc.op, at: tc.at}).Middleware)}, nil)
			rec, err := firstCrawl(t, crashing, sizes)
			if err == nil || !strings.Contains(err.Error(), errCrash.Error()) {
				t.Fatalf("interrupted crawl: %v", err)
			}
			c := st.catalog(t, nil, nil)
			ctx := t.Context()
			if keys, err := c.VersionKeys(ctx, "big"); err != nil || len(keys) != 0 {
				t.Errorf("after the interruption: %d version keys, %v", len(keys), err)
			}
			for _, v := range []warrant.Version{rec.Versions[0], rec.Versions[149]} {
				if _, err := c.Version(ctx, "big", v.Tool, v.Digest); !errors.Is(err, warrant.ErrNotFound) {
					t.Errorf("after the interruption, Version(%s): %v; want ErrNotFound", v.Tool, err)
				}
			}
			if len(st.objects(t)) == 0 {
				t.Error("the interrupted crawl wrote no object: the test does not interrupt after the blob writes")
			}
			head, _ := c.AuditHead(ctx)
			if err := c.RecordCrawl(ctx, rec, warrant.AuditAppend{Prev: head, Records: catalogtest.Records(head, 1+len(rec.Versions), warrant.EventVersionRecorded)}); err != nil {
				t.Fatalf("recording the crawl again: %v", err)
			}
			verify(t, st, c, rec)
		})
	}
	t.Run("LostResponses", func(t *testing.T) {
		st := newStack(t, true)
		lost := func(op string, n int64) *awstest.Fault {
			return &awstest.Fault{Operation: op, Fail: func(k int64) bool { return k == n }}
		}
		tx, put, obj := lost("TransactWriteItems", 2), lost("PutItem", 5), lost("PutObject", 3)
		c := st.catalog(t, []func(*dynamodb.Options){dynOpt(tx.Middleware), dynOpt(put.Middleware)}, []func(*s3.Options){s3Opt(obj.Middleware)})
		rec, err := firstCrawl(t, c, sizes)
		if err != nil {
			t.Fatalf("a crawl whose responses were lost once each: %v", err)
		}
		if tx.Attempts() < 3 || put.Attempts() < 6 || obj.Attempts() < 4 {
			t.Errorf("attempts: TransactWriteItems %d, PutItem %d, PutObject %d; the faults did not fire", tx.Attempts(), put.Attempts(), obj.Attempts())
		}
		verify(t, st, c, rec)
	})
}
