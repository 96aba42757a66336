package extmcp

import (
	"fmt"
	"math/bits"
	"sync"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Buffer pool tiers: every power of two from 2^minTier to 2^maxTier bytes.
const (
	minTier = 8  // 256 B
	maxTier = 24 // 16 MiB, past the largest message the processor accepts by default
)

// tieredPool is a gRPC buffer pool with a tier at every power of two that hands buffers
// out as they were last used, without clearing them.
//
// grpc-go's public pools clear the whole tier on every Get, and its default tiers jump
// from 32 KiB to 1 MiB. A 58 KB tools/list message took a 1 MiB buffer, cleared, each
// time grpc-go's codec decoded the request or encoded the reply: 18.6% of the
// processor's CPU went to clearing at 2,000 listings a second, 16% in the codec's
// buffers (perf, 2026-12-03). Here every power of two is a tier and nothing is cleared.
// Clearing protects a codec that reads a buffer before writing it; the processor's
// buffers are only ever filled whole before they are read — a frame read with
// io.ReadFull, a message copied in, a reply marshalled to the exact size the codec
// measured — which is why grpc-go's own transport reads frames into a pool that does not
// clear (imem.NewDirtySimplePool).
// TestTieredPool pins the tier arithmetic; the server tests run every RPC through it.
type tieredPool struct {
	tiers [maxTier - minTier + 1]sync.Pool
}

var _ mem.BufferPool = (*tieredPool)(nil)

// tier is the index of the smallest tier holding size bytes, or -1 past the largest.
func tier(size int) int {
	if size <= 1<<minTier {
		return 0
	}
	e := bits.Len(uint(size - 1)) // 2^e is the smallest power of two >= size
	if e > maxTier {
		return -1
	}
	return e - minTier
}

// Get returns a buffer of length size; its bytes are whatever was last written there.
func (p *tieredPool) Get(size int) *[]byte {
	t := tier(size)
	if t < 0 {
		b := make([]byte, size)
		return &b
	}
	if b, ok := p.tiers[t].Get().(*[]byte); ok {
		*b = (*b)[:size]
		return b
	}
	b := make([]byte, size, 1<<(t+minTier))
	return &b
}

// Put keeps a buffer whose capacity is one of the tiers; anything else is left to the
// garbage collector.
func (p *tieredPool) Put(b *[]byte) {
	c := cap(*b)
	t := tier(c)
	if t < 0 || c != 1<<(t+minTier) {
		return
	}
	p.tiers[t].Put(b)
}

// poolCodec is the protobuf codec of the processor's server: grpc-go's own, except that
// it takes its buffers from pool. (grpc-go's codec takes them from the process-wide
// default pool whatever pool the server is given: the experimental.BufferPool option
// reaches only the transport's frame reads, and setting the default pool is for a
// process's init. The codec's two buffers per message were 1 MiB cleared for each 58 KB
// listing, on each side.)
type poolCodec struct{ pool mem.BufferPool }

var _ encoding.CodecV2 = poolCodec{}

func (poolCodec) Name() string { return "proto" }

// Marshal encodes v into one pooled buffer of exactly its encoded size.
func (c poolCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("extmcp codec: cannot marshal %T, not a protobuf message", v)
	}
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true} // the size just computed
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := c.pool.Get(size)
	out, err := opts.MarshalAppend((*buf)[:0], m)
	if err != nil {
		c.pool.Put(buf)
		return nil, err
	}
	if len(out) != size || cap(out) != cap(*buf) {
		// The encoding did not fill exactly the buffer it was given (the message changed
		// under it): send what was encoded, never a pooled buffer's older bytes.
		c.pool.Put(buf)
		return mem.BufferSlice{mem.SliceBuffer(out)}, nil
	}
	*buf = out
	return mem.BufferSlice{mem.NewBuffer(buf, c.pool)}, nil
}

// Unmarshal decodes data into v; a message split over several frames is first copied
// whole into one pooled buffer. (proto.Unmarshal copies what it keeps, so the buffer goes
// back to the pool when it returns.)
func (c poolCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("extmcp codec: cannot unmarshal into %T, not a protobuf message", v)
	}
	buf := data.MaterializeToBuffer(c.pool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}
