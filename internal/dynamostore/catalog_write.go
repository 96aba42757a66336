package dynamostore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentgate-dev/agentgate/internal/awserr"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// cclassify wraps a DynamoDB error that is not a condition failure for the catalog port:
// throttling, 5xx, timeouts and network errors become warrant.ErrUnavailable; the driver's
// cause is text (%v), not part of the contract.
func cclassify(op string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", op, err)
	}
	if awserr.Transient(err, unavailableCodes) {
		return fmt.Errorf("%s: %w: %v", op, warrant.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %v", op, err)
}

func (c *Catalog) writeID() (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(c.rand, b[:]); err != nil {
		return "", fmt.Errorf("read random: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// beginWrite starts write op: its id, and the items that append a's audit records under it.
func (c *Catalog) beginWrite(op string, a warrant.AuditAppend) (string, []txItem, error) {
	wid, err := c.writeID()
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", op, err)
	}
	aud, err := c.auditItems(op, a, wid)
	if err != nil {
		return "", nil, err
	}
	return wid, aud, nil
}

// role says what a transaction item is, to map cancellation reasons back to the port.
type role int

const (
	roleOther role = iota
	roleServer
	roleHead
	roleApproval
	roleVersion
	roleMarker
	roleQueued
)

type txItem struct {
	item types.TransactWriteItem
	role role
}

// txResult is what a cancelled transaction tells: which roles failed their condition,
// whether one of the failed items carried our write ID (an earlier attempt committed), and
// the old item of the failed server/approval item.
type txResult struct {
	failed map[role]bool
	own    bool
	old    map[role]map[string]types.AttributeValue
}

// transact sends items as one TransactWriteItems with ClientRequestToken wid-attempt. A
// cancellation only for TransactionConflict or throttling wrote nothing and is re-sent
// after a jittered pause (at most MaxTxAttempts in all), then ErrUnavailable. A
// cancellation for failed conditions is returned as a txResult for the caller to map.
//
// Until the table is known to hold the format marker, the marker's put rides along (see
// markerItem); a marker of another version cancels the write with an error.
func (c *Catalog) transact(ctx context.Context, op, wid string, items []txItem) (*txResult, error) {
	marker := c.markerItem()
	if marker != nil {
		items = append(slices.Clip(items), *marker)
	}
	if len(items) > maxTxItems {
		return nil, fmt.Errorf("%s: %w: the write needs %d items, more than the %d one DynamoDB transaction holds", op, warrant.ErrInvalid, len(items), maxTxItems)
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: make([]types.TransactWriteItem, len(items))}
	for i, it := range items {
		in.TransactItems[i] = it.item
	}
	var last error
	for attempt := 1; attempt <= c.attempts; attempt++ {
		in.ClientRequestToken = aws.String(fmt.Sprintf("%s-%d", wid, attempt))
		_, err := c.db.TransactWriteItems(ctx, in)
		if err == nil {
			if marker != nil {
				c.marked.Store(true)
			}
			return nil, nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return nil, cclassify(op, err)
		}
		res := &txResult{failed: map[role]bool{}, old: map[role]map[string]types.AttributeValue{}}
		retry := false
		for i, r := range tce.CancellationReasons {
			code := aws.ToString(r.Code)
			switch code {
			case "", "None":
			case "ConditionalCheckFailed":
				res.failed[items[i].role] = true
				if r.Item != nil {
					res.old[items[i].role] = r.Item
					if sval(r.Item, "wid") == wid {
						res.own = true
					}
				}
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				retry = true
			default:
				return nil, fmt.Errorf("%s: transaction cancelled: %s: %v", op, code, err)
			}
		}
		if res.failed[roleMarker] {
			return nil, fmt.Errorf("%s: %w", op, foreignFormat(aws.ToString(c.table), sval(res.old[roleMarker], "version")))
		}
		if res.own {
			if marker != nil {
				c.marked.Store(true)
			}
			return nil, nil // an earlier attempt of this very write committed
		}
		if len(res.failed) > 0 {
			return res, nil
		}
		if !retry {
			return nil, cclassify(op, err)
		}
		last = err
		c.log.WarnContext(ctx, "catalog transaction re-sent", "op", op, "attempt", attempt, "reason", cancelCode(tce.CancellationReasons))
		if attempt < c.attempts {
			d := c.backoff << (attempt - 1)
			d = d/2 + time.Duration(mrand.Int64N(int64(d)))
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, cclassify(op, ctx.Err())
			}
		}
	}
	return nil, fmt.Errorf("%s: %w: cancelled %d times by conflicting or throttled items: %v", op, warrant.ErrUnavailable, c.attempts, last)
}

// auditItems validates a and returns the items that append its records and advance the
// head from a.Prev: the REC# items (records packed by size) and the conditional head update.
func (c *Catalog) auditItems(op string, a warrant.AuditAppend, wid string) ([]txItem, error) {
	if len(a.Records) == 0 {
		return nil, nil
	}
	prev := a.Prev
	for _, r := range a.Records {
		if r.Seq != prev.Seq+1 || r.PrevHash != prev.Hash || len(r.Hash) != 64 {
			return nil, fmt.Errorf("%s: audit record %d does not link to the head %d: %w", op, r.Seq, prev.Seq, warrant.ErrInvalid)
		}
		prev = warrant.AuditHead{Seq: r.Seq, Hash: r.Hash}
	}
	var items []txItem
	var batch []recordJSON
	size := 0
	flush := func() {
		if len(batch) == 0 {
			return
		}
		b, _ := json.Marshal(batch)
		last := batch[len(batch)-1].Seq
		items = append(items, txItem{item: types.TransactWriteItem{Put: &types.Put{TableName: c.table,
			Item:                with(keyOf(pkAudit, skRecords(last)), "first", num(batch[0].Seq), "last", num(last), "recs", bin(b)),
			ConditionExpression: aws.String("attribute_not_exists(pk)")}}})
		batch, size = nil, 0
	}
	for _, r := range a.Records {
		rj := recordJSON{r.Seq, r.Type, r.Actor, r.At.UTC().Format(time.RFC3339Nano), r.PrevHash, r.Hash, r.Body, r.KeyID, r.Signature}
		n := len(r.Body)*4/3 + len(r.Signature)*4/3 + len(r.Type) + len(r.Actor) + 300
		if size+n > chunkBytes {
			flush()
		}
		batch = append(batch, rj)
		size += n
	}
	flush()
	head := types.Update{TableName: c.table, Key: keyOf(pkAudit, skHead),
		UpdateExpression:                    aws.String("SET seq = :new, #h = :hash, wid = :wid"),
		ExpressionAttributeNames:            map[string]string{"#h": "hash"},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
	vals := map[string]types.AttributeValue{":new": num(prev.Seq), ":hash": str(prev.Hash), ":wid": str(wid)}
	if a.Prev.Seq == 0 {
		head.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		head.ConditionExpression = aws.String("seq = :seq AND #h = :prev")
		vals[":seq"], vals[":prev"] = num(a.Prev.Seq), str(a.Prev.Hash)
	}
	head.ExpressionAttributeValues = vals
	items = append(items, txItem{item: types.TransactWriteItem{Update: &head}, role: roleHead})
	return items, nil
}

// AddServer implements warrant.Catalog: one TransactWriteItems putting SERVERS/SRV#name
// with attribute_not_exists (and the audit records); on a failed condition the stored
// server is compared: identical is a no-op, different ErrConflict.
func (c *Catalog) AddServer(ctx context.Context, s warrant.Server, a warrant.AuditAppend) error {
	if err := s.Validate(); err != nil {
		return err
	}
	op := "add server " + s.Name
	wid, aud, err := c.beginWrite(op, a)
	if err != nil {
		return err
	}
	item := with(keyOf(pkServers, skServer(s.Name)), "name", str(s.Name), "url", str(s.URL), "allow_private", boolean(s.AllowPrivate),
		"headers", str(headersJSON(s.Headers)), "added_at", tstr(s.AddedAt), "added_by", str(s.AddedBy), "last_crawl", num(0), "last_source_crawl", num(0), "wid", str(wid))
	items := append([]txItem{{item: types.TransactWriteItem{Put: &types.Put{TableName: c.table, Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"), ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}, role: roleServer}}, aud...)
	res, err := c.transact(ctx, op, wid, items)
	if err != nil || res == nil {
		return err
	}
	if res.failed[roleServer] {
		old, err := c.Server(ctx, s.Name)
		if err != nil {
			return err
		}
		if old.URL == s.URL && old.AllowPrivate == s.AllowPrivate && slices.Equal(old.Headers, s.Headers) {
			return nil
		}
		return fmt.Errorf("%s: %w: a different server has this name", op, warrant.ErrConflict)
	}
	return fmt.Errorf("%s: %w: the audit log moved on", op, warrant.ErrConflict)
}

// RecordCrawl implements warrant.Catalog (catalog.md, "RecordCrawl"): it reads the server
// and its index, applies the crawl to the index (warrant.Index.Apply, which checks the
// record), checks that everything fits DynamoDB's limits (ErrInvalid, nothing written,
// when it cannot), then writes, each step idempotent:
//
//  1. the payloads too large for an item to the blob store, put-if-absent by content key;
//  2. the new versions the transaction has no room for (100 items, txBudget bytes), staged:
//     put with attribute_not_exists and staged = true, invisible until an index lists them;
//  3. one TransactWriteItems: the server's last_crawl advanced on the condition
//     last_crawl = seq-1, the crawl item(s), the other new versions, the index if it
//     changed, and the audit records with the head.
//
// A failure at any step leaves only what nothing reads: objects no item names, staged
// versions no index lists. The next crawl of the same digests adopts them.
func (c *Catalog) RecordCrawl(ctx context.Context, r warrant.CrawlRecord, a warrant.AuditAppend) error {
	if err := warrant.ValidateCrawl(r); err != nil {
		return err
	}
	cr := r.Crawl
	op := fmt.Sprintf("record crawl %s #%d", cr.Server, cr.Seq)
	srv, err := c.get(ctx, op, pkServers, skServer(cr.Server))
	if err != nil {
		return err
	}
	if srv == nil {
		return fmt.Errorf("%s: server %q: %w", op, cr.Server, warrant.ErrNotFound)
	}
	if last := nval(srv, "last_crawl"); last+1 != cr.Seq {
		return fmt.Errorf("%s: the server's last crawl is %d: %w", op, last, warrant.ErrConflict)
	}
	ix, err := c.index(ctx, cr.Server)
	if err != nil {
		return err
	}
	prev := serverOf(srv)
	known := make([]bool, len(r.Versions)) // already listed by the index: compared, not put
	for i, v := range r.Versions {
		known[i] = ix.HasVersion(v.Tool, v.Digest)
	}
	changed, err := ix.Apply(r, prev.LastSourceCrawl)
	if err != nil {
		return err
	}
	next := prev.After(cr)
	wid, err := c.writeID()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	pending := pendingBlobs{}
	pk := pkServer(cr.Server)
	items := []txItem{{role: roleServer, item: types.TransactWriteItem{Update: &types.Update{TableName: c.table, Key: keyOf(pkServers, skServer(cr.Server)),
		UpdateExpression:                    aws.String("SET last_crawl = :seq, last_source_crawl = :lsc, wid = :wid"),
		ConditionExpression:                 aws.String("last_crawl = :prev"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":seq": num(next.LastCrawl), ":lsc": num(next.LastSourceCrawl), ":prev": num(cr.Seq - 1), ":wid": str(wid)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}}}
	putNew := func(item map[string]types.AttributeValue) txItem {
		return txItem{item: types.TransactWriteItem{Put: &types.Put{TableName: c.table, Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}}}
	}
	// The crawl item: its observations in the blob store when large and one is
	// configured, else packed in chunks (CRAWL#<seq>, then #<k>) of the transaction.
	obs := obsJSON(cr.Observations)
	head := with(keyOf(pk, skCrawl(cr.Seq)), "source", str(string(cr.Source)), "started_at", tstr(cr.StartedAt), "finished_at", tstr(cr.FinishedAt),
		"by", str(cr.By), "tools", num(int64(len(cr.Observations))))
	if c.blobs != nil && len(obs) > blobAbove {
		attrs, err := c.payload(op, "the crawl's observations", "obs", obs, pending)
		if err != nil {
			return err
		}
		items = append(items, putNew(with(head, attrs...)))
	} else {
		for k := 0; k == 0 || k*chunkBytes < len(obs); k++ {
			part := obs[k*chunkBytes : min(len(obs), (k+1)*chunkBytes)]
			item := with(head, "obs", bin(part))
			if k > 0 {
				item = with(keyOf(pk, fmt.Sprintf("%s#%04d", skCrawl(cr.Seq), k)), "obs", bin(part))
			}
			items = append(items, putNew(item))
		}
	}
	// Versions, put if absent; one already stored must hold the same bytes.
	var verItems []map[string]types.AttributeValue
	for i, v := range r.Versions {
		if known[i] {
			old, err := c.get(ctx, op, pk, skVersion(v.Tool, v.Digest))
			if err != nil {
				return err
			}
			if !sameVersion(old, map[string]types.AttributeValue{"digest": str(string(v.Digest)), "canonical": bin(v.Canonical)}) {
				return fmt.Errorf("%s: version %s/%s is stored with other bytes: %w", op, v.Tool, string(v.Digest), warrant.ErrConflict)
			}
			continue
		}
		attrs, err := c.payload(op, fmt.Sprintf("version %s/%s %s", v.Server, v.Tool, v.Digest), "canonical", v.Canonical, pending)
		if err != nil {
			return err
		}
		verItems = append(verItems, with(keyOf(pk, skVersion(v.Tool, v.Digest)), append([]any{"tool", str(v.Tool), "digest", str(string(v.Digest)),
			"first_seen_at", tstr(v.FirstSeenAt), "first_seen_by", str(v.FirstSeenBy), "first_crawl", num(v.FirstCrawl)}, attrs...)...))
	}
	// The index, when the crawl changed it (an unchanged listing does not touch it).
	if changed {
		after, err := json.Marshal(ix)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		attrs, err := c.payload(op, "the server's index (its tools, versions and proposals)", "idx", after, pending)
		if err != nil {
			return err
		}
		items = append(items, txItem{item: types.TransactWriteItem{Put: &types.Put{TableName: c.table, Item: with(keyOf(pk, skIndex), attrs...)}}})
	}
	aud, err := c.auditItems(op, a, wid)
	if err != nil {
		return err
	}
	items = append(items, aud...)
	// The transaction: the items above, and as many new versions as fit within 100 items
	// and txBudget bytes, the format marker included; the rest are staged.
	n, size := len(items), 0
	if m := c.markerItem(); m != nil {
		n, size = n+1, txItemSize(m.item)
	}
	for _, it := range items {
		s := txItemSize(it.item)
		if s > maxItemBytes {
			return fmt.Errorf("%s: an item of the write would hold %d bytes, more than DynamoDB's %d: %w", op, s, maxItemBytes, warrant.ErrInvalid)
		}
		size += s
	}
	if n > maxTxItems || size > txBudget {
		hint := "configure a blob store for the catalog (CATALOG_BLOB_BUCKET) to keep large objects out of it"
		if c.blobs != nil {
			hint = "too many audit records for one write"
		}
		return fmt.Errorf("%s: the crawl's record needs %d items and %d bytes in one DynamoDB transaction (at most %d and %d): %s: %w",
			op, n, size, maxTxItems, txBudget, hint, warrant.ErrInvalid)
	}
	var staged []map[string]types.AttributeValue
	for _, item := range verItems {
		s := itemSize(item)
		if n < maxTxItems && size+s <= txBudget {
			// An orphan of a failed crawl (staged, listed by no index) may hold this key:
			// it is this very version (the digest is in the key), replaced by the put.
			items = append(items, txItem{role: roleVersion, item: types.TransactWriteItem{Put: &types.Put{TableName: c.table, Item: item,
				ConditionExpression:       aws.String("attribute_not_exists(pk) OR staged = :staged"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":staged": boolean(true)}}}})
			n, size = n+1, size+s
			continue
		}
		staged = append(staged, with(item, "staged", boolean(true)))
	}
	if len(pending) > 0 {
		if err := c.putBlobs(ctx, op, pending); err != nil {
			return err
		}
	}
	if err := forEach(ctx, len(staged), func(ctx context.Context, i int) error { return c.stage(ctx, op, cr.Server, staged[i]) }); err != nil {
		return err
	}
	res, err := c.transact(ctx, op, wid, items)
	if err != nil || res == nil {
		return err
	}
	switch {
	case res.failed[roleServer]:
		return fmt.Errorf("%s: another crawl of the server was recorded first: %w", op, warrant.ErrConflict)
	case res.failed[roleHead]:
		return fmt.Errorf("%s: the audit log moved on: %w", op, warrant.ErrConflict)
	default:
		return fmt.Errorf("%s: an item it writes exists already: %w", op, warrant.ErrConflict)
	}
}

// Decide implements warrant.Catalog: it reads the version and the tool's approval item,
// then writes one TransactWriteItems: the approval item updated on the condition that its
// approved digest is still d.Expect (and its decision count unchanged), the decision item
// put with attribute_not_exists, and the audit records with the head. A failure only of
// the count (a concurrent decision that left the approval as expected) is re-read and
// re-sent, at most MaxTxAttempts times.
func (c *Catalog) Decide(ctx context.Context, d warrant.Decision, a warrant.AuditAppend) error {
	if err := warrant.ValidateDecision(d); err != nil {
		return err
	}
	op := fmt.Sprintf("record %s of %s/%s", d.Kind, d.Server, d.Tool)
	if _, err := c.versionItem(ctx, d.Server, d.Tool, d.Digest); err != nil {
		return fmt.Errorf("%s: %s is not a recorded version: %w", op, d.Digest, err)
	}
	wid, aud, err := c.beginWrite(op, a)
	if err != nil {
		return err
	}
	for range c.attempts {
		items, err := c.decisionItems(ctx, op, d, wid)
		if err != nil {
			return err
		}
		items = append(items, aud...)
		res, err := c.transact(ctx, op, wid, items)
		if err != nil || res == nil {
			return err
		}
		if res.failed[roleHead] {
			return fmt.Errorf("%s: the audit log moved on since it was read: %w", op, warrant.ErrConflict)
		}
		if old := res.old[roleApproval]; res.failed[roleApproval] && old != nil && warrant.Digest(sval(old, "approved")) == d.Expect {
			continue // only the decision count moved: read again and re-send
		}
		return fmt.Errorf("%s: the approval changed since it was read: %w", op, warrant.ErrConflict)
	}
	return fmt.Errorf("%s: %w: concurrent decisions on the tool", op, warrant.ErrUnavailable)
}

// decisionItems reads the tool's approval item and returns the transaction items that
// record d under write wid: the approval updated on the condition that its approved
// digest is still d.Expect and its decision count unchanged (role roleApproval), and the
// decision item put.
func (c *Catalog) decisionItems(ctx context.Context, op string, d warrant.Decision, wid string) ([]txItem, error) {
	item, err := c.get(ctx, op, pkApprovals, skApproval(d.Server, d.Tool))
	if err != nil {
		return nil, err
	}
	st := approvalOf(item)
	next, err := st.Decide(d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	kinds, _ := json.Marshal(next.Latest)
	n := next.Decisions
	set := "SET #s = :server, tool = :tool, n = :n, kinds = :kinds, wid = :wid"
	vals := map[string]types.AttributeValue{":server": str(d.Server), ":tool": str(d.Tool), ":n": num(n), ":kinds": str(string(kinds)), ":wid": str(wid)}
	if next.Approved != "" {
		set += ", approved = :next, #by = :by, #at = :at"
		vals[":next"], vals[":by"], vals[":at"] = str(string(next.Approved)), str(next.By), tstr(next.At)
	} else {
		set += " REMOVE approved, #by, #at"
	}
	cond := "attribute_not_exists(pk)"
	if item != nil {
		cond = "n = :prevn AND "
		vals[":prevn"] = num(st.Decisions)
		if d.Expect == "" {
			cond += "attribute_not_exists(approved)"
		} else {
			cond += "approved = :expect"
			vals[":expect"] = str(string(d.Expect))
		}
	}
	return []txItem{{role: roleApproval, item: types.TransactWriteItem{Update: &types.Update{TableName: c.table, Key: keyOf(pkApprovals, skApproval(d.Server, d.Tool)),
		UpdateExpression: aws.String(set), ConditionExpression: aws.String(cond), ExpressionAttributeValues: vals,
		ExpressionAttributeNames:            map[string]string{"#s": "server", "#by": "by", "#at": "at"},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}},
		{item: types.TransactWriteItem{Put: &types.Put{TableName: c.table, ConditionExpression: aws.String("attribute_not_exists(pk)"),
			Item: with(keyOf(pkServer(d.Server), skDecision(d.Tool, n)), "tool", str(d.Tool), "digest", str(string(d.Digest)), "kind", str(string(d.Kind)),
				"actor", str(d.Actor), "at", tstr(d.At), "expect", str(string(d.Expect)), "accepted_suspicious", boolean(d.AcceptedSuspicious), "note", str(d.Note))}}}}, nil
}

// DecideAll implements warrant.Catalog: each decision's version is read, then one
// TransactWriteItems writes every decision as Decide does, with the audit records and
// the head. A failed condition is not re-sent: the decider reads again.
func (c *Catalog) DecideAll(ctx context.Context, ds []warrant.Decision, a warrant.AuditAppend) error {
	if len(ds) == 0 {
		return fmt.Errorf("record decisions: none: %w", warrant.ErrInvalid)
	}
	op := fmt.Sprintf("record %d decisions", len(ds))
	seen := map[string]bool{}
	for _, d := range ds {
		if err := warrant.ValidateDecision(d); err != nil {
			return err
		}
		k := skApproval(d.Server, d.Tool)
		if seen[k] {
			return fmt.Errorf("%s: %s/%s twice: %w", op, d.Server, d.Tool, warrant.ErrInvalid)
		}
		seen[k] = true
	}
	// Two items per decision, one per audit record, the head: refuse before any read.
	if n := 2*len(ds) + len(a.Records) + 1; n > maxTxItems-1 {
		return fmt.Errorf("%s: %w: the write needs %d items, more than the %d one DynamoDB transaction holds", op, warrant.ErrInvalid, n, maxTxItems)
	}
	for _, d := range ds {
		if _, err := c.versionItem(ctx, d.Server, d.Tool, d.Digest); err != nil {
			return fmt.Errorf("%s: %s/%s: %s is not a recorded version: %w", op, d.Server, d.Tool, d.Digest, err)
		}
	}
	wid, aud, err := c.beginWrite(op, a)
	if err != nil {
		return err
	}
	var items []txItem
	for _, d := range ds {
		its, err := c.decisionItems(ctx, op, d, wid)
		if err != nil {
			return err
		}
		items = append(items, its...)
	}
	res, err := c.transact(ctx, op, wid, append(items, aud...))
	if err != nil || res == nil {
		return err
	}
	if res.failed[roleHead] {
		return fmt.Errorf("%s: the audit log moved on since it was read: %w", op, warrant.ErrConflict)
	}
	return fmt.Errorf("%s: an approval changed since it was read: %w", op, warrant.ErrConflict)
}

// AppendAudit implements warrant.Catalog: one TransactWriteItems of the records and the
// conditional head update.
func (c *Catalog) AppendAudit(ctx context.Context, a warrant.AuditAppend) error {
	if len(a.Records) == 0 {
		return fmt.Errorf("append audit: no records: %w", warrant.ErrInvalid)
	}
	wid, items, err := c.beginWrite("append audit", a)
	if err != nil {
		return err
	}
	res, err := c.transact(ctx, "append audit", wid, items)
	if err != nil || res == nil {
		return err
	}
	return fmt.Errorf("append audit: the head is no longer %d: %w", a.Prev.Seq, warrant.ErrConflict)
}

// stage puts a version item outside the crawl's transaction (see RecordCrawl). One already
// there holding the same version (an orphan of a failed crawl, or a racing crawl's) is fine.
func (c *Catalog) stage(ctx context.Context, op, server string, item map[string]types.AttributeValue) error {
	_, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: c.table, Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if err == nil {
		return nil
	}
	var cf *types.ConditionalCheckFailedException
	if !errors.As(err, &cf) {
		return cclassify(op+": stage version", err)
	}
	if sameVersion(cf.Item, item) {
		return nil
	}
	old, gerr := c.get(ctx, op, pkServer(server), sval(item, "sk"))
	if gerr != nil {
		return gerr
	}
	if sameVersion(old, item) {
		return nil
	}
	return fmt.Errorf("%s: version %s is stored with other bytes: %w", op, sval(item, "sk"), warrant.ErrConflict)
}
