package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Review policies (catalog.md, "Review policies"): the active set is one item
// POLICIES / SET holding the set's JSON and its change number (seq), the check-and-set
// counter; each change is also an immutable item POLICIES / CHG#seq, put if absent, so
// the table keeps the history beside the audit log. A set is at most MaxPolicies policies
// of MaxPolicyBytes each, well within an item's 400 KB.
const (
	pkPolicies  = "POLICIES"
	skPolicySet = "SET"
)

func skPolicyChange(seq int64) string { return fmt.Sprintf("CHG#%012d", seq) }

// Policies implements warrant.Catalog: one GetItem.
func (c *Catalog) Policies(ctx context.Context) (warrant.PolicySet, error) {
	item, err := c.get(ctx, "read review policies", pkPolicies, skPolicySet)
	if err != nil {
		return warrant.PolicySet{}, err
	}
	if item == nil {
		return warrant.PolicySet{Policies: []warrant.ActivePolicy{}}, nil
	}
	var ps warrant.PolicySet
	if err := json.Unmarshal([]byte(sval(item, "body")), &ps); err != nil || ps.Seq != nval(item, "seq") {
		return warrant.PolicySet{}, fmt.Errorf("read review policies: change %d is unreadable (run 'toolwarrant audit verify'): %v", nval(item, "seq"), err)
	}
	if ps.Policies == nil {
		ps.Policies = []warrant.ActivePolicy{}
	}
	return ps, nil
}

// SetPolicies implements warrant.Catalog: one TransactWriteItems of the set (on the
// condition that its seq is next.Seq-1, or absent for the first), the change's history
// item (put if absent) and the audit records.
func (c *Catalog) SetPolicies(ctx context.Context, next warrant.PolicySet, a warrant.AuditAppend) error {
	if err := next.Validate(); err != nil {
		return err
	}
	op := fmt.Sprintf("record review policy change %d", next.Seq)
	body, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	wid, aud, err := c.beginWrite(op, a)
	if err != nil {
		return err
	}
	cond, vals := "seq = :prev", map[string]types.AttributeValue{":prev": num(next.Seq - 1)}
	if next.Seq == 1 {
		cond, vals = "attribute_not_exists(pk)", nil
	}
	items := []txItem{{role: roleServer, item: types.TransactWriteItem{Put: &types.Put{TableName: c.table,
		Item:                      with(keyOf(pkPolicies, skPolicySet), "seq", num(next.Seq), "body", str(string(body)), "wid", str(wid)),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeValues: vals, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}},
		{item: types.TransactWriteItem{Put: &types.Put{TableName: c.table, ConditionExpression: aws.String("attribute_not_exists(pk)"),
			Item: with(keyOf(pkPolicies, skPolicyChange(next.Seq)), "body", str(string(body)), "wid", str(wid))}}}}
	items = append(items, aud...)
	res, err := c.transact(ctx, op, wid, items)
	if err != nil || res == nil {
		return err
	}
	switch {
	case res.failed[roleServer]:
		return fmt.Errorf("%s: the policies were changed since they were read (change %d): %w", op, nval(res.old[roleServer], "seq"), warrant.ErrConflict)
	case res.failed[roleHead]:
		return fmt.Errorf("%s: the audit log moved on since it was read: %w", op, warrant.ErrConflict)
	}
	return fmt.Errorf("%s: %w: the change was written by another writer", op, warrant.ErrConflict)
}
