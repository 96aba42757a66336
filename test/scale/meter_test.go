package scale_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// meter is a DynamoDB client middleware that accounts for every call the code under
// measurement makes: calls per operation, items read and written, their bytes by
// DynamoDB's item-size rules, and the capacity units DynamoDB would charge for them
// (on-demand: 1 WCU per KB written, 2 in a transaction; 1 RCU per 4 KB read strongly
// consistent, half eventually consistent). It also asks for ReturnConsumedCapacity=TOTAL
// and sums what the endpoint reports, to show whether that can be trusted: moto 5.2.1
// reports a constant per call (1 for a put or update, 0.5 for a GetItem, none for a
// transaction), not a measurement, so the units quoted are the computed ones.
//
// Writes and reads are also tallied by partition key (pk), so the hottest partition's
// units per second — what DynamoDB's 1,000 WCU / 3,000 RCU per-partition limits apply
// to — and the updates of the audit HEAD item can be reported per step.
type meter struct {
	mu sync.Mutex
	t  tally
	// sizes remembers each item's last known size (from a read or a put), so an update
	// is charged by the larger of the item before and after, as DynamoDB does.
	sizes map[string]int
}

// tally is what one step cost.
type tally struct {
	Calls                   map[string]int
	ItemsRead, ItemsWritten int
	BytesRead, BytesWritten int
	RCU, WCU                float64
	// Reported is the sum of ConsumedCapacity.CapacityUnits the endpoint returned.
	Reported float64
	// PartRCU and PartWCU are the units by partition key.
	PartRCU, PartWCU map[string]float64
	// HeadUpdates counts the updates of AUDIT/HEAD (committed or not: a cancelled
	// transaction is charged too).
	HeadUpdates int
	// Cancelled counts TransactWriteItems calls that failed (a condition, a conflict).
	Cancelled int
	// MaxItem is the largest item written (bytes), against DynamoDB's 400 KB.
	MaxItem int
	// Time is the time spent in DynamoDB calls, as the client saw it (retries included),
	// summed over concurrent calls.
	Time time.Duration
}

func newMeter() *meter { return &meter{t: newTally(), sizes: map[string]int{}} }

func newTally() tally {
	return tally{Calls: map[string]int{}, PartRCU: map[string]float64{}, PartWCU: map[string]float64{}}
}

// Take returns the tally since the last Take and starts a new one.
func (m *meter) Take() tally {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.t
	m.t = newTally()
	return t
}

// Option installs the meter on a DynamoDB client.
func (m *meter) Option(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, m.middleware) }

func (m *meter) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("scale.meter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			askCapacity(in.Parameters)
			start := time.Now()
			out, md, err := next.HandleInitialize(ctx, in)
			m.record(middleware.GetOperationName(ctx), in.Parameters, out.Result, err, time.Since(start))
			return out, md, err
		}), middleware.After)
}

// askCapacity sets ReturnConsumedCapacity=TOTAL on the inputs that take it.
func askCapacity(p any) {
	total := types.ReturnConsumedCapacityTotal
	switch in := p.(type) {
	case *dynamodb.GetItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.QueryInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.PutItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.UpdateItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.TransactWriteItemsInput:
		in.ReturnConsumedCapacity = total
	}
}

func reported(cc ...*types.ConsumedCapacity) float64 {
	var n float64
	for _, c := range cc {
		if c != nil && c.CapacityUnits != nil {
			n += *c.CapacityUnits
		}
	}
	return n
}

func (m *meter) record(op string, in, out any, err error, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &m.t
	t.Calls[op]++
	t.Time += took
	switch in := in.(type) {
	case *dynamodb.GetItemInput:
		pk := keyString(in.Key, "pk")
		half := in.ConsistentRead == nil || !*in.ConsistentRead
		o, _ := out.(*dynamodb.GetItemOutput)
		size := 0
		if o != nil && o.Item != nil {
			size = itemSize(o.Item)
			t.ItemsRead++
			t.BytesRead += size
			m.sizes[itemKey(in.Key)] = size
		}
		if o != nil {
			t.Reported += reported(o.ConsumedCapacity)
		}
		m.read(pk, readUnits(size, half))
	case *dynamodb.QueryInput:
		pk := ""
		if v, ok := in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS); ok {
			pk = v.Value
		}
		half := in.ConsistentRead == nil || !*in.ConsistentRead
		o, _ := out.(*dynamodb.QueryOutput)
		size := 0
		if o != nil {
			for _, it := range o.Items {
				s := itemSize(it)
				size += s
				m.sizes[itemKey(it)] = s
			}
			t.ItemsRead += len(o.Items)
			t.BytesRead += size
			t.Reported += reported(o.ConsumedCapacity)
		}
		m.read(pk, readUnits(size, half))
	case *dynamodb.PutItemInput:
		size := itemSize(in.Item)
		t.ItemsWritten++
		t.BytesWritten += size
		m.written(size)
		m.write(keyString(in.Item, "pk"), writeUnits(max(size, m.sizes[itemKey(in.Item)])))
		m.sizes[itemKey(in.Item)] = size
		if o, _ := out.(*dynamodb.PutItemOutput); o != nil {
			t.Reported += reported(o.ConsumedCapacity)
		}
	case *dynamodb.UpdateItemInput:
		size := updateSize(in.Key, in.ExpressionAttributeValues)
		t.ItemsWritten++
		t.BytesWritten += size
		m.write(keyString(in.Key, "pk"), writeUnits(max(size, m.sizes[itemKey(in.Key)])))
		if o, _ := out.(*dynamodb.UpdateItemOutput); o != nil {
			t.Reported += reported(o.ConsumedCapacity)
		}
	case *dynamodb.TransactWriteItemsInput:
		if err != nil {
			t.Cancelled++
		}
		for _, it := range in.TransactItems {
			var key map[string]types.AttributeValue
			size := 0
			switch {
			case it.Put != nil:
				key, size = it.Put.Item, itemSize(it.Put.Item)
				size = max(size, m.sizes[itemKey(key)])
				if err == nil {
					m.sizes[itemKey(key)] = itemSize(it.Put.Item)
				}
			case it.Update != nil:
				key = it.Update.Key
				size = max(updateSize(key, it.Update.ExpressionAttributeValues), m.sizes[itemKey(key)])
				if keyString(key, "pk") == "AUDIT" && keyString(key, "sk") == "HEAD" {
					t.HeadUpdates++
				}
			case it.Delete != nil:
				key, size = it.Delete.Key, m.sizes[itemKey(it.Delete.Key)]
			case it.ConditionCheck != nil: // charged as a transactional write of the item
				key, size = it.ConditionCheck.Key, m.sizes[itemKey(it.ConditionCheck.Key)]
			}
			if it.ConditionCheck == nil {
				t.ItemsWritten++
				t.BytesWritten += size
				m.written(size)
			}
			m.write(keyString(key, "pk"), 2*writeUnits(size))
		}
		if o, _ := out.(*dynamodb.TransactWriteItemsOutput); o != nil {
			for i := range o.ConsumedCapacity {
				t.Reported += reported(&o.ConsumedCapacity[i])
			}
		}
	}
}

func (m *meter) read(pk string, u float64) {
	m.t.RCU += u
	m.t.PartRCU[pk] += u
}

func (m *meter) written(size int) { m.t.MaxItem = max(m.t.MaxItem, size) }

func (m *meter) write(pk string, u float64) {
	m.t.WCU += u
	m.t.PartWCU[pk] += u
}

// readUnits: 1 RCU per 4 KB (rounded up, at least 1) strongly consistent, half that
// eventually consistent. A Query's items are summed before rounding, as DynamoDB does.
func readUnits(size int, half bool) float64 {
	u := math.Max(1, math.Ceil(float64(size)/4096))
	if half {
		u /= 2
	}
	return u
}

// writeUnits: 1 WCU per KB, rounded up, at least 1.
func writeUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

// updateSize is what an update writes at least: its key and its values (the item's other
// attributes are counted from its last known size).
func updateSize(key, vals map[string]types.AttributeValue) int {
	n := itemSize(key)
	for _, v := range vals {
		n += attrSize(v)
	}
	return n
}

func keyString(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func itemKey(item map[string]types.AttributeValue) string {
	return keyString(item, "pk") + "\x00" + keyString(item, "sk")
}

// itemSize is an item's size by DynamoDB's rules: attribute names plus values.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + attrSize(v)
	}
	return n
}

// attrSize: strings by UTF-8 length, binaries by length, numbers about one byte per two
// significant digits plus one, Booleans and nulls one byte, lists and maps 3 bytes plus
// one per element plus their contents (map keys as attribute names), sets their elements.
func attrSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + attrSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + attrSize(e)
		}
		return n
	}
	return 0
}

func numberSize(s string) int {
	s = strings.TrimLeft(strings.TrimPrefix(s, "-"), "0")
	digits := len(strings.ReplaceAll(s, ".", ""))
	return (digits+1)/2 + 1
}

// timer counts and times the calls of a client (KMS: one Sign per audit entry).
type timer struct {
	mu sync.Mutex
	n  int
	d  time.Duration
}

func (k *timer) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("scale.timer",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			start := time.Now()
			out, md, err := next.HandleInitialize(ctx, in)
			k.mu.Lock()
			k.n++
			k.d += time.Since(start)
			k.mu.Unlock()
			return out, md, err
		}), middleware.After)
}

// Take returns the calls and their time since the last Take.
func (k *timer) Take() (int, time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	n, d := k.n, k.d
	k.n, k.d = 0, 0
	return n, d
}

// step is one measured step: its tally, its wall time and how many units of work it did.
type step struct {
	Name string
	Wall time.Duration
	T    tally
	KMS  int
	// KMSTime is the time spent in KMS calls (the in-process local-kms).
	KMSTime time.Duration
	Units   int // servers, appends or reads, as the step says
}

// ownTime is the step's wall time less its DynamoDB and KMS time: what the function itself
// spent (digesting, chaining, JSON), where calls are not concurrent.
func (s step) ownTime() time.Duration { return max(0, s.Wall-s.T.Time-s.KMSTime) }

func (s step) calls() int {
	n := 0
	for _, c := range s.T.Calls {
		n += c
	}
	return n
}

// readCalls counts the read requests (GetItem, Query).
func (s step) readCalls() int { return s.T.Calls["GetItem"] + s.T.Calls["Query"] }

// hottest returns the partition with the most units of m, and its units.
func hottest(m map[string]float64) (string, float64) {
	best, units := "", 0.0
	for k, u := range m {
		if u > units || (u == units && k < best) {
			best, units = k, u
		}
	}
	return best, units
}

// String is one line of the step's costs for the benchmark's log.
func (s step) String() string {
	ops := make([]string, 0, len(s.T.Calls))
	for op, n := range s.T.Calls {
		ops = append(ops, fmt.Sprintf("%s=%d", op, n))
	}
	sort.Strings(ops)
	hw, hwu := hottest(s.T.PartWCU)
	hr, hru := hottest(s.T.PartRCU)
	return fmt.Sprintf("%s: %d units in %s (DynamoDB %s, KMS %s); calls %s (KMS %d); items read %d (%d B), written %d (%d B); RCU %.0f WCU %.0f (endpoint reported %.1f); hottest write partition %s %.0f WCU, read %s %.0f RCU; largest item written %d B; HEAD updates %d, cancelled transactions %d",
		s.Name, s.Units, s.Wall.Round(time.Millisecond), s.T.Time.Round(time.Millisecond), s.KMSTime.Round(time.Millisecond), strings.Join(ops, " "), s.KMS, s.T.ItemsRead, s.T.BytesRead, s.T.ItemsWritten, s.T.BytesWritten,
		s.T.RCU, s.T.WCU, s.T.Reported, partName(hw), hwu, partName(hr), hru, s.T.MaxItem, s.T.HeadUpdates, s.T.Cancelled)
}

// partName shortens SRV#<name> partitions (one per server) for the log.
func partName(pk string) string {
	if strings.HasPrefix(pk, "SRV#") {
		return "SRV#…"
	}
	return pk
}
