package awstest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// DynamoDB's service limits, as documented ("Service, account, and table quotas in
// Amazon DynamoDB"). moto enforces only some of them, and loosely (an item limit of
// 405,000 bytes by its own measure; 100 transaction actions; no transaction byte limit).
const (
	MaxItemBytes        = 400 * 1024       // one item, attribute names included
	MaxTransactItems    = 100              // actions in TransactWriteItems / TransactGetItems
	MaxTransactBytes    = 4 * 1024 * 1024  // aggregate size of the items in one transaction
	MaxBatchGetKeys     = 100              // keys in one BatchGetItem
	MaxBatchWriteItems  = 25               // requests in one BatchWriteItem
	MaxBatchWriteBytes  = 16 * 1024 * 1024 // one BatchWriteItem request
	MaxKMSMessageBytes  = 4096             // KMS Sign/Verify Message (RAW)
	maxPartitionKeySize = 2048
)

// attr is one DynamoDB JSON AttributeValue ({"S": …}, {"N": …}, {"M": {…}} …).
type attr map[string]json.RawMessage

// String is the value as IAM's dynamodb:LeadingKeys sees a key: the string, the number's
// text, or the binary's base64.
func (a attr) String() string {
	for _, t := range []string{"S", "N", "B"} {
		if raw, ok := a[t]; ok {
			var s string
			_ = json.Unmarshal(raw, &s)
			return s
		}
	}
	return ""
}

// size is the value's size by DynamoDB's rules: strings by UTF-8 length, binaries by
// length, numbers about one byte per two significant digits plus one, Boolean and Null one
// byte, lists and maps 3 bytes plus one per element plus their contents (map keys counted
// as attribute names), sets the sum of their elements.
func (a attr) size() (int, error) {
	for t, raw := range a {
		switch t {
		case "S":
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return 0, err
			}
			return len(s), nil
		case "N":
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return 0, err
			}
			return numberSize(s), nil
		case "B":
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return 0, err
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return 0, fmt.Errorf("binary value is not base64: %w", err)
			}
			return len(b), nil
		case "BOOL", "NULL":
			return 1, nil
		case "SS", "NS", "BS":
			var l []string
			if err := json.Unmarshal(raw, &l); err != nil {
				return 0, err
			}
			n := 0
			for _, s := range l {
				switch t {
				case "SS":
					n += len(s)
				case "NS":
					n += numberSize(s)
				case "BS":
					b, err := base64.StdEncoding.DecodeString(s)
					if err != nil {
						return 0, err
					}
					n += len(b)
				}
			}
			return n, nil
		case "L":
			var l []attr
			if err := json.Unmarshal(raw, &l); err != nil {
				return 0, err
			}
			n := 3
			for _, e := range l {
				s, err := e.size()
				if err != nil {
					return 0, err
				}
				n += 1 + s
			}
			return n, nil
		case "M":
			var m map[string]attr
			if err := json.Unmarshal(raw, &m); err != nil {
				return 0, err
			}
			n := 3
			for k, e := range m {
				s, err := e.size()
				if err != nil {
					return 0, err
				}
				n += 1 + len(k) + s
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("attribute value %v has no known type", a)
}

func numberSize(s string) int {
	s = strings.TrimLeft(strings.TrimPrefix(s, "-"), "0")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Trim(strings.Replace(s, ".", "", 1), "0")
	return (len(s)+1)/2 + 1
}

// ItemSize is the size DynamoDB charges an item against MaxItemBytes.
func itemSize(item map[string]attr) (int, error) {
	n := 0
	for k, v := range item {
		s, err := v.size()
		if err != nil {
			return 0, fmt.Errorf("attribute %s: %w", k, err)
		}
		n += len(k) + s
	}
	return n, nil
}

func validation(msg string) *errorResponse {
	return &errorResponse{400, "com.amazon.coral.validate#ValidationException", msg, nil}
}

// dynamoLimits refuses a request DynamoDB would refuse for its size, with DynamoDB's
// error: ValidationException, or TransactionCanceledException with a ValidationError
// reason for an oversized item inside a transaction.
func dynamoLimits(op string, body []byte) *errorResponse {
	switch op {
	case "PutItem":
		var in struct{ Item map[string]attr }
		if err := json.Unmarshal(body, &in); err != nil {
			return validation("awstest: " + err.Error())
		}
		n, err := itemSize(in.Item)
		if err != nil {
			return validation("awstest: " + err.Error())
		}
		if n > MaxItemBytes {
			return validation(fmt.Sprintf("Item size has exceeded the maximum allowed size (awstest: %d bytes > %d)", n, MaxItemBytes))
		}
	case "TransactWriteItems":
		var in struct {
			TransactItems []map[string]struct {
				Key                       map[string]attr
				Item                      map[string]attr
				ExpressionAttributeValues map[string]attr
			}
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return validation("awstest: " + err.Error())
		}
		if len(in.TransactItems) > MaxTransactItems {
			return validation(fmt.Sprintf("1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d (awstest: %d)", MaxTransactItems, len(in.TransactItems)))
		}
		total := 0
		reasons := make([]map[string]any, len(in.TransactItems))
		oversized := false
		for i, ti := range in.TransactItems {
			reasons[i] = map[string]any{"Code": "None"}
			for kind, it := range ti {
				var n int
				var err error
				if kind == "Put" {
					n, err = itemSize(it.Item)
				} else {
					// Update, Delete, ConditionCheck: the key, plus what an update sets.
					n, err = itemSize(it.Key)
					if err == nil {
						v, verr := itemSize(it.ExpressionAttributeValues)
						n, err = n+v, verr
					}
				}
				if err != nil {
					return validation("awstest: " + err.Error())
				}
				if kind == "Put" && n > MaxItemBytes {
					oversized = true
					reasons[i] = map[string]any{"Code": "ValidationError", "Message": "Item size has exceeded the maximum allowed size"}
				}
				total += n
			}
		}
		if oversized {
			codes := make([]string, len(reasons))
			for i, r := range reasons {
				codes[i] = r["Code"].(string)
			}
			return &errorResponse{400, dynamoErr + "TransactionCanceledException",
				"Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
				map[string]any{"CancellationReasons": reasons}}
		}
		if total > MaxTransactBytes {
			return validation(fmt.Sprintf("Transaction request cannot be larger than 4 MB (awstest: the items total %d bytes)", total))
		}
	case "TransactGetItems":
		var in struct{ TransactItems []json.RawMessage }
		if err := json.Unmarshal(body, &in); err != nil {
			return validation("awstest: " + err.Error())
		}
		if len(in.TransactItems) > MaxTransactItems {
			return validation(fmt.Sprintf("1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d", MaxTransactItems))
		}
	case "BatchGetItem":
		var in struct {
			RequestItems map[string]struct{ Keys []json.RawMessage }
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return validation("awstest: " + err.Error())
		}
		n := 0
		for _, t := range in.RequestItems {
			n += len(t.Keys)
		}
		if n > MaxBatchGetKeys {
			return validation(fmt.Sprintf("Too many items requested for the BatchGetItem call (awstest: %d keys > %d)", n, MaxBatchGetKeys))
		}
	case "BatchWriteItem":
		if len(body) > MaxBatchWriteBytes {
			return validation("Item collection size limit exceeded: the request is larger than 16 MB")
		}
		var in struct {
			RequestItems map[string][]struct {
				PutRequest *struct{ Item map[string]attr }
			}
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return validation("awstest: " + err.Error())
		}
		n := 0
		for _, reqs := range in.RequestItems {
			n += len(reqs)
			for _, r := range reqs {
				if r.PutRequest == nil {
					continue
				}
				s, err := itemSize(r.PutRequest.Item)
				if err != nil {
					return validation("awstest: " + err.Error())
				}
				if s > MaxItemBytes {
					return validation("Item size has exceeded the maximum allowed size")
				}
			}
		}
		if n > MaxBatchWriteItems {
			return validation(fmt.Sprintf("1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to %d]", MaxBatchWriteItems))
		}
	}
	return nil
}
