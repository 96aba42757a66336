package extmcp

import (
	"bytes"
	"slices"
	"sync"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/extmcp/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func TestTieredPool(t *testing.T) {
	p := &tieredPool{}
	for _, tc := range []struct{ size, cap int }{
		{0, 256}, {1, 256}, {256, 256}, {257, 512}, {4096, 4096}, {4097, 8192},
		{58 << 10, 64 << 10}, {64 << 10, 64 << 10}, {1 << 24, 1 << 24},
		{1<<24 + 1, 1<<24 + 1}, // past the largest tier: allocated to size, never pooled
	} {
		b := p.Get(tc.size)
		if len(*b) != tc.size || cap(*b) != tc.cap {
			t.Errorf("Get(%d): len %d cap %d, want len %d cap %d", tc.size, len(*b), cap(*b), tc.size, tc.cap)
		}
		p.Put(b)
	}
	// A buffer comes back at the length asked for, its capacity kept; one whose capacity
	// is not a tier is not kept.
	b := p.Get(60 << 10)
	(*b)[0] = 1
	*b = (*b)[:10]
	p.Put(b)
	if g := p.Get(33 << 10); len(*g) != 33<<10 || cap(*g) != 64<<10 {
		t.Errorf("reused buffer: len %d cap %d", len(*g), cap(*g))
	}
	odd := make([]byte, 3000)
	p.Put(&odd)
	if g := p.Get(3000); cap(*g) != 4096 {
		t.Errorf("a buffer of capacity 3000 was pooled: got cap %d", cap(*g))
	}
}

func TestPoolCodec(t *testing.T) {
	c := poolCodec{&tieredPool{}}
	msg := &pb.McpResponse{ServiceNames: []string{"everything"}, Method: "tools/list", McpResponse: bytes.Repeat([]byte(`{"a":1},`), 8000)}
	want, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	// Dirty the pool's buffers of the tier the message lands in: none of it may show.
	for range 4 {
		b := c.pool.Get(len(want))
		for i := range *b {
			(*b)[i] = 0xee
		}
		c.pool.Put(b)
	}
	for _, m := range []proto.Message{msg, &pb.McpResponse{Method: "tools/list"}} { // pooled, and below the pooling threshold
		data, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got := data.Materialize()
		data.Free()
		w, _ := proto.Marshal(m)
		if !bytes.Equal(got, w) {
			t.Fatalf("Marshal: %d bytes, not proto.Marshal's %d", len(got), len(w))
		}
	}
	// A message that arrived in three frames.
	split := mem.BufferSlice{mem.SliceBuffer(want[:10]), mem.SliceBuffer(want[10 : 16<<10]), mem.SliceBuffer(want[16<<10:])}
	var back pb.McpResponse
	if err := c.Unmarshal(split, &back); err != nil || !proto.Equal(&back, msg) {
		t.Fatalf("Unmarshal of a split message: %v", err)
	}
	if _, err := c.Marshal("not a message"); err == nil {
		t.Error("Marshal accepted a string")
	}
	if err := c.Unmarshal(split, new(string)); err == nil {
		t.Error("Unmarshal accepted a string")
	}
}

// countingPool records the sizes asked of a pool.
type countingPool struct {
	mem.BufferPool
	mu    sync.Mutex
	sizes []int
}

func (p *countingPool) Get(n int) *[]byte {
	p.mu.Lock()
	p.sizes = append(p.sizes, n)
	p.mu.Unlock()
	return p.BufferPool.Get(n)
}

// The server's codec takes a whole message's buffers from the processor's pool (grpc-go's
// codec would take them from the process-wide default pool, which clears 1 MiB for each).
func TestServerCodecUsesThePool(t *testing.T) {
	cp := &countingPool{BufferPool: &tieredPool{}}
	saved := bufferPool
	bufferPool = cp
	t.Cleanup(func() { bufferPool = saved })
	result, src := listingN(t, 100)
	tp := newTestProcessor(t, src, []string{"everything"}, nil)
	gw := startServer(t, tp.Processor)
	req := &pb.McpResponse{ServiceNames: []string{"everything"}, Method: "tools/list", McpResponse: result}
	res, err := gw.c.CheckResponse(t.Context(), req)
	if err != nil || res.GetMutated() == nil {
		t.Fatalf("listing not filtered: %v %v", err, res)
	}
	reply := proto.Size(res)
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if !slices.Contains(cp.sizes, proto.Size(req)) || !slices.Contains(cp.sizes, reply) {
		t.Fatalf("the pool was asked for %v; want the request's %d bytes (decoding) and the reply's %d (encoding)", cp.sizes, proto.Size(req), reply)
	}
}

// rawFrames sends bytes as they are and keeps the answer's bytes.
type rawFrames struct{}

func (rawFrames) Name() string { return "proto" }

func (rawFrames) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawFrames) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

// A message the codec cannot decode is an error status (which the gateway, failOpen
// false, renders as a denial), never a result; the pooled buffers it passed through do
// not leak into the next answer, which is exactly the decision a fresh server makes.
func TestUndecodableMessageIsRefused(t *testing.T) {
	result, src := listingN(t, 100)
	tp := newTestProcessor(t, src, []string{"everything"}, nil)
	gw := startServer(t, tp.Processor)
	good, err := proto.Marshal(&pb.McpResponse{ServiceNames: []string{"everything"}, Method: "tools/list", McpResponse: result})
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] = 0xff  // a field key with wire type 7: not a protobuf message
	bad = append(bad, 0x0f) // and a truncated tail
	var out []byte
	err = gw.conn.Invoke(t.Context(), "/"+ServiceName+"/CheckResponse", &bad, &out, grpc.ForceCodecV2(rawFrames{}))
	if err == nil {
		t.Fatalf("an undecodable message got an answer of %d bytes", len(out))
	}
	if got := status.Code(err); got != codes.Internal {
		t.Errorf("status %v (%v), want Internal", got, err)
	}
	want, err := gw.c.CheckResponse(t.Context(), &pb.McpResponse{ServiceNames: []string{"everything"}, Method: "tools/list", McpResponse: result})
	if err != nil || want.GetMutated() == nil {
		t.Fatalf("the listing after it: %v %v", err, want)
	}
	d := tp.Decide(t.Context(), enforce.Message{Phase: enforce.PhaseResponse, Method: "tools/list", Services: []string{"everything"}, Body: result})
	if !bytes.Equal(want.GetMutated(), d.Mutated) {
		t.Fatal("the answer after an undecodable message differs from the processor's own decision")
	}
}
