package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/padwire"
)

// DefaultPadCacheBytes bounds the cache of sealed pads' encoded binary form.
const DefaultPadCacheBytes = 32 << 20

// DefaultMaxWireBytes bounds a binary /blocks answer. A pad within the byte quota (256 KiB
// of payload, at most 4096 blocks with their hashes and content types of ordinary length)
// answers in under 1 MiB; only long content types make it larger. 4 MiB base64-encoded is
// 5.6 MB, inside Lambda's 6 MB (6,291,456-byte) result with room for the response's
// headers: the pads Lambda never answers with a result Lambda refuses.
const DefaultMaxWireBytes = 4 << 20

// headerAllowance is the most a binary header (pad id, ranges, manifest) takes.
const headerAllowance = 2 << 10

// acceptsPadwire reports whether the request's Accept header asks for the binary form: our
// media type with a q above zero, and not below application/json's q. Without it, nothing
// changes: the JSON contract is what every other client gets.
func acceptsPadwire(r *http.Request) bool {
	vals := r.Header.Values("Accept")
	if len(vals) == 0 {
		return false
	}
	ours, jsonQ := -1.0, -1.0
	for _, v := range vals {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, _ := strings.Cut(part, ";")
			mt = strings.ToLower(strings.TrimSpace(mt))
			q := 1.0
			for p := range strings.SplitSeq(params, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
						q = f
					}
				}
			}
			switch mt {
			case padwire.MediaType:
				ours = max(ours, q)
			case "application/json":
				jsonQ = max(jsonQ, q)
			}
		}
	}
	return ours > 0 && ours >= jsonQ
}

// blocksWire serves a /blocks read in the binary form (padwire): the whole requested
// range in one response, the slice caps lifted (the pad's quotas bound it), every check,
// refusal and the read lease as for JSON. The header carries the pad's manifest from the
// same pad record, so a reader of the whole pad needs one request. The whole answer is
// cached by pad, for the head and state it was encoded at (padCache): a hit skips the
// store's block reads and the encoding, and goes out in one write. An answer
// the binary form cannot carry (a negative from echoed by an empty read) is served as
// JSON, which the client asked to accept.
func (a *api) blocksWire(w http.ResponseWriter, r *http.Request, padID, ticket string, from, to int, hasTo bool) {
	var cached []byte
	opt := locker.ReadOptions{Whole: true, Check: func(blocks []locker.Block) error {
		size := headerAllowance + padwire.EndSize
		for _, b := range blocks {
			size += padwire.BlockSize(padwire.Block{PrevHash: b.PrevHash, CurrHash: b.CurrHash, ContentType: b.ContentType}, len(b.Payload))
		}
		if size > a.maxWire {
			return &locker.Error{Kind: locker.KindTooLarge, Detail: fmt.Sprintf("binary answer exceeds %d bytes; read the pad in pages", a.maxWire)}
		}
		return nil
	}}
	if a.pads != nil {
		opt.Reuse = func(p locker.Pad) bool {
			cached = a.pads.get(p.ID, p.HeadHash, p.State)
			return cached != nil
		}
	}
	s, err := a.svc.ReadBlocksWith(r.Context(), padID, ticket, from, to, hasTo, opt)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	body := cached
	if !s.Reused {
		var ok bool
		if body, ok = encodeWire(s); !ok {
			a.writeBlocksJSON(w, s)
			return
		}
		if a.pads != nil && s.From == 0 && s.To == s.TotalBlocks-1 && len(s.Blocks) > 0 {
			a.pads.put(padID, s.Pad.HeadHash, s.Pad.State, body)
		}
	}
	h := w.Header()
	h.Set("Content-Type", padwire.MediaType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Vary", "Accept")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// encodeWire encodes s with its pad's manifest; ok is false when the binary form cannot
// carry it.
func encodeWire(s locker.Slice) ([]byte, bool) {
	m, err := encodeJSON(newManifest(s.Pad))
	hd := padwire.Header{PadID: s.PadID, From: uint32(s.From), To: uint32(s.To), Count: uint32(len(s.Blocks)), TotalBlocks: uint32(s.TotalBlocks), Manifest: m}
	if err != nil || s.From < 0 || s.To < 0 || s.TotalBlocks < 0 || !hd.Fits() {
		return nil, false
	}
	size := padwire.HeaderSize(hd) + padwire.EndSize
	bs := make([]padwire.Block, len(s.Blocks))
	for i, b := range s.Blocks {
		bs[i] = padwire.Block{Seq: uint32(b.Seq), CreatedAt: b.CreatedAt, PrevHash: b.PrevHash, CurrHash: b.CurrHash, ContentType: b.ContentType}
		if b.Seq < 0 || !bs[i].Fits(len(b.Payload)) {
			return nil, false
		}
		size += padwire.BlockSize(bs[i], len(b.Payload))
	}
	out := padwire.AppendHeader(make([]byte, 0, size), hd)
	for i, b := range s.Blocks {
		out = padwire.AppendBlock(out, bs[i], b.Payload)
	}
	return padwire.AppendEnd(out), true
}

// padCache holds pads' encoded binary form of the whole pad, one answer per pad, for the
// head and state it was encoded at: a pad's blocks up to a head never change and its
// manifest at a head changes only with its state (lazy expiry, seal), so an answer for the
// same head and state is byte for byte what encoding again would give. A sealed pad's
// answer is final; an open pad's is replaced by its next read after an append. Bounded by
// bytes; when full it is emptied (one cold read per pad costs what every read cost before).
type padCache struct {
	mu    sync.RWMutex
	m     map[string]cachedPad
	bytes int
	max   int
}

type cachedPad struct {
	head  string
	state locker.State
	body  []byte
}

func newPadCache(maxBytes int) *padCache {
	if maxBytes <= 0 {
		return nil
	}
	return &padCache{m: map[string]cachedPad{}, max: maxBytes}
}

func (c *padCache) get(padID, head string, state locker.State) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e, ok := c.m[padID]; ok && e.head == head && e.state == state {
		return e.body
	}
	return nil
}

func (c *padCache) put(padID, head string, state locker.State, body []byte) {
	if len(body) > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[padID]; ok {
		c.bytes -= len(old.body)
	}
	if c.bytes+len(body) > c.max {
		clear(c.m)
		c.bytes = 0
	}
	c.m[padID] = cachedPad{head, state, body}
	c.bytes += len(body)
}
