package dynamostore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentgate-dev/agentgate/internal/blob"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Large objects (catalog.md, "Large objects"). A payload — a version's canonical bytes, a
// server's index, a crawl's observations — is kept in its item while it is small, and
// otherwise, when a blob store is configured, written to it under its content digest
// (blobPrefix + hex SHA-256) before the transaction that references it; the item then
// holds "blob" (the key) and "size" instead. Every read checks the fetched bytes against
// that digest and size: an altered object is an error, never served.
const (
	// blobPrefix is the key prefix of every catalog object (IAM grants it alone).
	blobPrefix = "catalog/sha256/"
	// blobAbove: with a blob store, a payload larger than this goes to it. It keeps
	// the common tool (a few KB) in its item, one read, and bounds what one version adds
	// to a transaction, so ~90 of them fit beside the crawl's other items.
	blobAbove = 32 << 10
	// maxInline: without a blob store, the largest payload kept in one item (DynamoDB
	// items hold 400 KB, attribute names included); larger is ErrInvalid.
	maxInline = 350 << 10
	// maxItemBytes is DynamoDB's item size limit.
	maxItemBytes = 400 << 10
	// txBudget bounds the aggregate item size of one TransactWriteItems below DynamoDB's
	// 4 MB, leaving room for what the estimate of an updated item cannot know.
	txBudget = 3 << 20
	// updateSlack is what an updated item (the server, the audit head) may hold beyond
	// the values the update sets: counted into the budget for each update.
	updateSlack = 8 << 10
	// DefaultMaxBlobBytes is the default of CatalogConfig.MaxBlobBytes: above the crawl's
	// default response cap (10 MiB, TOOLWARRANT_CRAWL_MAX_RESPONSE_BYTES), with room for a
	// canonical form longer than what was served and for a large server's index.
	DefaultMaxBlobBytes = 32 << 20
	// blobWorkers bounds the concurrent blob writes and staged puts of one crawl.
	blobWorkers = 8
	// indexCacheEntries bounds the cache of index objects (immutable: keyed by digest).
	indexCacheEntries = 64
)

// blobKeyOf returns the content key of b.
func blobKeyOf(b []byte) string {
	sum := sha256.Sum256(b)
	return blobPrefix + hex.EncodeToString(sum[:])
}

// pendingBlobs are the objects a write must store before its transaction, by key.
type pendingBlobs map[string][]byte

// payload returns the attributes that hold data in an item: attr = data inline, or, when it
// is larger than an item should hold and a blob store is configured, blob = key and size =
// len(data) with the object added to pending. what names the payload in errors.
func (c *Catalog) payload(op, what, attr string, data []byte, pending pendingBlobs) ([]any, error) {
	switch {
	case c.blobs != nil && len(data) > blobAbove:
		if int64(len(data)) > c.maxBlob {
			return nil, fmt.Errorf("%s: %s is %d bytes, more than the catalog's largest object (%d bytes, CatalogConfig.MaxBlobBytes): %w",
				op, what, len(data), c.maxBlob, warrant.ErrInvalid)
		}
		key := blobKeyOf(data)
		pending[key] = data
		return []any{"blob", str(key), "size", num(int64(len(data)))}, nil
	case c.blobs == nil && len(data) > maxInline:
		return nil, fmt.Errorf("%s: %s is %d bytes, more than one DynamoDB item holds (%d): configure a blob store for the catalog "+
			"(CATALOG_BLOB_BUCKET, template.yaml's CatalogBlobBucket) to store it: %w", op, what, len(data), maxInline, warrant.ErrInvalid)
	}
	return []any{attr, bin(data)}, nil
}

// load returns an item's payload: attr inline, or the object its blob attribute names,
// checked against the digest in its key and its recorded size. nil when it has neither.
func (c *Catalog) load(ctx context.Context, op string, item map[string]types.AttributeValue, attr string) ([]byte, error) {
	if v, ok := item[attr].(*types.AttributeValueMemberB); ok {
		return v.Value, nil
	}
	key := sval(item, "blob")
	if key == "" {
		return nil, nil
	}
	sum, ok := strings.CutPrefix(key, blobPrefix)
	if _, err := hex.DecodeString(sum); !ok || err != nil || len(sum) != 64 || strings.ToLower(sum) != sum {
		return nil, fmt.Errorf("%s: the item names %q, not a catalog object", op, key)
	}
	if c.blobs == nil {
		return nil, fmt.Errorf("%s: the item's payload is the object %s, and no blob store is configured for the catalog (CATALOG_BLOB_BUCKET)", op, key)
	}
	b, err := c.blobs.Get(ctx, key)
	if err != nil {
		return nil, bclassify(op+": read "+key, err)
	}
	if got := blobKeyOf(b); got != key || int64(len(b)) != nval(item, "size") {
		return nil, fmt.Errorf("%s: the object %s holds %d bytes hashing to %s, not the %d recorded: it was altered or damaged, and is not used",
			op, key, len(b), strings.TrimPrefix(got, blobPrefix), nval(item, "size"))
	}
	return b, nil
}

// bclassify wraps a blob store error for the catalog port: ErrUnavailable stays so; the
// rest (not found, access denied, a conflict on a content key) is a driver failure.
func bclassify(op string, err error) error {
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", op, err)
	case errors.Is(err, blob.ErrUnavailable):
		return fmt.Errorf("%s: %w: %v", op, warrant.ErrUnavailable, err)
	case errors.Is(err, blob.ErrConflict):
		return fmt.Errorf("%s: the bucket holds other bytes under this content key: it was altered (%v)", op, err)
	}
	return fmt.Errorf("%s: %v", op, err)
}

// putBlobs stores pending objects, put-if-absent, blobWorkers at a time. An object already
// there with the same bytes (a retry, or another server's identical tool) is fine; one
// that is written and then not referenced, because the transaction after it failed, is a
// harmless orphan: content-addressed, never listed, adopted by the next write of the same
// bytes.
func (c *Catalog) putBlobs(ctx context.Context, op string, pending pendingBlobs) error {
	keys := make([]string, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	return forEach(ctx, len(keys), func(ctx context.Context, i int) error {
		if err := c.blobs.PutIfAbsent(ctx, keys[i], pending[keys[i]]); err != nil {
			return bclassify(op+": write "+keys[i], err)
		}
		return nil
	})
}

// forEach runs fn(0..n-1), blobWorkers at a time, and returns the first error (the others
// are cancelled).
func forEach(ctx context.Context, n int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		sem   = make(chan struct{}, blobWorkers)
	)
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// indexCache holds index objects read from the blob store, by key: immutable, so a hit
// needs no check. Bounded; emptied when full.
type indexCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (ic *indexCache) get(key string) []byte {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return ic.m[key]
}

func (ic *indexCache) put(key string, b []byte) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.m == nil || len(ic.m) >= indexCacheEntries {
		ic.m = map[string][]byte{}
	}
	ic.m[key] = b
}

// attrSize is the size DynamoDB counts for a value: strings and binaries by their length,
// numbers at most one byte per digit plus one, lists and maps 3 bytes plus 1 per element.
func attrSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return len(x.Value) + 1
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + attrSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + attrSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		return setSize(x.Value, 0)
	case *types.AttributeValueMemberNS:
		return setSize(x.Value, 1)
	case *types.AttributeValueMemberBS:
		return setSize(x.Value, 0)
	}
	return 0
}

// setSize is the size of a set whose members count their length plus extra each.
func setSize[E ~string | ~[]byte](set []E, extra int) int {
	n := 0
	for _, e := range set {
		n += len(e) + extra
	}
	return n
}

// itemSize is an item's size by DynamoDB's rules: attribute names plus values.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + attrSize(v)
	}
	return n
}

// txItemSize bounds what one transaction item counts against the transaction's
// aggregate size: a put its item; an update its key, the values it sets and updateSlack
// for the rest of the item; a condition check its key.
func txItemSize(it types.TransactWriteItem) int {
	switch {
	case it.Put != nil:
		return itemSize(it.Put.Item)
	case it.Update != nil:
		n := itemSize(it.Update.Key) + updateSlack
		for _, v := range it.Update.ExpressionAttributeValues {
			n += attrSize(v)
		}
		for _, name := range it.Update.ExpressionAttributeNames {
			n += len(name)
		}
		return n
	case it.ConditionCheck != nil:
		return itemSize(it.ConditionCheck.Key)
	case it.Delete != nil:
		return itemSize(it.Delete.Key)
	}
	return 0
}

// sameVersion reports whether the stored version item old holds the version item nw
// describes: the same digest (its sort key says so too) and, when both hold their bytes
// inline, the same bytes. An object in the blob store is checked against the digest on
// every read, so a blob reference is the bytes of its digest.
func sameVersion(old, nw map[string]types.AttributeValue) bool {
	d := sval(nw, "digest")
	if old == nil || sval(old, "digest") != d {
		return false
	}
	ob, nb := bval(old, "canonical"), bval(nw, "canonical")
	switch {
	case ob != nil && nb != nil:
		return bytes.Equal(ob, nb)
	case ob != nil:
		return string(warrant.DigestOf(ob)) == d
	}
	if key := sval(old, "blob"); key != "" {
		return strings.TrimPrefix(key, blobPrefix) == strings.TrimPrefix(d, "sha256:")
	}
	return false
}
