package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Package pins (catalog.md, "Package pins"): each pin is an immutable item
// SRV#name / PKG#seq, and the newest is copied onto the server's item (package_seq,
// package_pin), so Server and Servers read it at no extra cost and the crawl pays no
// read for it. The server item's package_seq is the check-and-set counter.

func skPackage(seq int64) string { return fmt.Sprintf("PKG#%012d", seq) }

// pinOf reads the newest pin from a server item; nil when it has none.
func pinOf(item map[string]types.AttributeValue) *warrant.PackagePin {
	seq := nval(item, "package_seq")
	if seq < 1 {
		return nil
	}
	return &warrant.PackagePin{Server: sval(item, "name"), Seq: seq, Spec: sval(item, "package_spec"),
		Identity: []byte(sval(item, "package_identity")), PinnedAt: tval(item, "package_at"), PinnedBy: sval(item, "package_by")}
}

// PinPackage implements warrant.Catalog: one TransactWriteItems of the pin's item (put if
// absent), the server item's newest pin (on the condition that its package_seq is the
// pin's Seq-1, or absent for the first) and the audit records.
func (c *Catalog) PinPackage(ctx context.Context, p warrant.PackagePin, a warrant.AuditAppend) error {
	if err := p.Validate(); err != nil {
		return err
	}
	op := fmt.Sprintf("pin package %d of %s", p.Seq, p.Server)
	wid, aud, err := c.beginWrite(op, a)
	if err != nil {
		return err
	}
	cond := "attribute_exists(pk) AND package_seq = :prev"
	vals := map[string]types.AttributeValue{":seq": num(p.Seq), ":spec": str(p.Spec), ":id": str(string(p.Identity)),
		":at": tstr(p.PinnedAt), ":by": str(p.PinnedBy), ":wid": str(wid), ":prev": num(p.Seq - 1)}
	if p.Seq == 1 {
		cond = "attribute_exists(pk) AND attribute_not_exists(package_seq)"
		delete(vals, ":prev")
	}
	items := []txItem{{role: roleServer, item: types.TransactWriteItem{Update: &types.Update{TableName: c.table, Key: keyOf(pkServers, skServer(p.Server)),
		UpdateExpression:                    aws.String("SET package_seq = :seq, package_spec = :spec, package_identity = :id, package_at = :at, package_by = :by, wid = :wid"),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}},
		{item: types.TransactWriteItem{Put: &types.Put{TableName: c.table, ConditionExpression: aws.String("attribute_not_exists(pk)"),
			Item: with(keyOf(pkServer(p.Server), skPackage(p.Seq)), "spec", str(p.Spec), "identity", str(string(p.Identity)),
				"at", tstr(p.PinnedAt), "by", str(p.PinnedBy), "wid", str(wid))}}}}
	items = append(items, aud...)
	res, err := c.transact(ctx, op, wid, items)
	if err != nil || res == nil {
		return err
	}
	switch {
	case res.failed[roleServer] && res.old[roleServer] == nil:
		return fmt.Errorf("%s: server %q: %w", op, p.Server, warrant.ErrNotFound)
	case res.failed[roleServer]:
		return fmt.Errorf("%s: the server's newest pin is %d: %w", op, nval(res.old[roleServer], "package_seq"), warrant.ErrConflict)
	case res.failed[roleHead]:
		return fmt.Errorf("%s: the audit log moved on since it was read: %w", op, warrant.ErrConflict)
	}
	return fmt.Errorf("%s: %w: the pin was written by another writer", op, warrant.ErrConflict)
}
