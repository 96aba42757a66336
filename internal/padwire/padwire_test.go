package padwire

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

func encode(h Header, blocks []Block, payloads [][]byte) []byte {
	out := AppendHeader(nil, h)
	for i, b := range blocks {
		out = AppendBlock(out, b, payloads[i])
	}
	return AppendEnd(out)
}

// decodeAll reads a whole stream; a block's payload is copied out.
func decodeAll(b []byte) (Header, []Frame, [][]byte, error) {
	r := NewReader(bytes.NewReader(b), bufio.NewReaderSize(nil, 16))
	h, err := r.Header()
	if err != nil {
		return h, nil, nil, err
	}
	var fs []Frame
	var ps [][]byte
	for {
		f, ok, err := r.Next()
		if err != nil {
			return h, fs, ps, err
		}
		if !ok {
			break
		}
		f.PrevHash, f.CurrHash, f.ContentType = bytes.Clone(f.PrevHash), bytes.Clone(f.CurrHash), bytes.Clone(f.ContentType)
		if f.PayloadLen > len(b) {
			// A payload longer than the whole stream (up to 4 GiB as stated) must end early:
			// skipped, not buffered, as a reader with a byte budget does.
			if err := r.Skip(); err != nil {
				return h, fs, ps, err
			}
			return h, fs, ps, errors.New("a payload longer than the stream was skipped whole")
		}
		p := make([]byte, f.PayloadLen)
		var seen bytes.Buffer
		if err := r.Payload(p, &seen); err != nil {
			return h, fs, ps, err
		}
		if !bytes.Equal(seen.Bytes(), p) {
			return h, fs, ps, errors.New("the writer did not see the payload as read")
		}
		fs, ps = append(fs, f), append(ps, p)
	}
	return h, fs, ps, r.End()
}

func TestRoundTrip(t *testing.T) {
	h := Header{PadID: "0123456789abcdef0123456789abcdef", From: 0, To: 2, Count: 3, TotalBlocks: 3,
		Manifest: []byte(`{"pad_id":"0123456789abcdef0123456789abcdef","state":"sealed","block_count":3}`)}
	blocks := []Block{
		{Seq: 0, CreatedAt: 1_800_000_000, PrevHash: string(bytes.Repeat([]byte("0"), 64)), CurrHash: string(bytes.Repeat([]byte("a"), 64)), ContentType: "application/json"},
		{Seq: 1, CreatedAt: -1, PrevHash: "x", CurrHash: "", ContentType: ""},
		{Seq: 2, CreatedAt: 7, PrevHash: "p", CurrHash: "c", ContentType: "text/plain; charset=utf-8"},
	}
	payloads := [][]byte{[]byte(`{"schema":"locker.handoff.v1"}`), {}, bytes.Repeat([]byte{0xff, 0}, 40000)}
	b := encode(h, blocks, payloads)
	size := HeaderSize(h) + EndSize
	for i, bl := range blocks {
		size += BlockSize(bl, len(payloads[i]))
	}
	if len(b) != size {
		t.Fatalf("encoded %d bytes, sizes say %d", len(b), size)
	}
	gh, fs, ps, err := decodeAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if !sameHeader(gh, h) || len(fs) != len(blocks) {
		t.Fatalf("header %+v, %d frames", gh, len(fs))
	}
	for i, f := range fs {
		w := blocks[i]
		if f.Seq != w.Seq || f.CreatedAt != w.CreatedAt || string(f.PrevHash) != w.PrevHash || string(f.CurrHash) != w.CurrHash ||
			string(f.ContentType) != w.ContentType || !bytes.Equal(ps[i], payloads[i]) {
			t.Errorf("frame %d: %+v", i, f)
		}
	}
}

func sameHeader(a, b Header) bool {
	return a.PadID == b.PadID && a.From == b.From && a.To == b.To && a.Count == b.Count && a.TotalBlocks == b.TotalBlocks &&
		bytes.Equal(a.Manifest, b.Manifest)
}

func TestMalformed(t *testing.T) {
	good := encode(Header{PadID: "p", Count: 1, Manifest: []byte(`{}`)}, []Block{{PrevHash: "a", CurrHash: "b"}}, [][]byte{[]byte("payload")})
	tests := map[string][]byte{
		"empty":               nil,
		"bad magic":           append([]byte("AGPX"), good[4:]...),
		"other version":       append(append([]byte("AGPB"), 1), good[5:]...),
		"cut in the header":   good[:9],
		"cut in the manifest": good[:HeaderSize(Header{PadID: "p", Manifest: []byte(`{}`)})-1],
		"cut in a frame":      good[:len(good)-8],
		"no end mark":         good[:len(good)-4],
		"data after the end":  append(bytes.Clone(good), 0),
		"frame too short":     append(AppendHeader(nil, Header{}), 0, 0, 0, 3),
		"members overrun":     append(AppendHeader(nil, Header{}), append([]byte{0, 0, 0, 16}, append(make([]byte, 12), 200)...)...),
	}
	for name, b := range tests {
		if _, _, _, err := decodeAll(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
}

// FuzzReader: any input decodes or is refused as ErrFormat, never panics, and whatever
// decodes re-encodes to the same bytes (the form is unique).
func FuzzReader(f *testing.F) {
	f.Add(encode(Header{PadID: "p", Count: 1, TotalBlocks: 1, Manifest: []byte(`{"block_count":1}`)}, []Block{{PrevHash: "a", CurrHash: "b", ContentType: "t"}}, [][]byte{[]byte("x")}))
	f.Add(encode(Header{}, nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, fs, ps, err := decodeAll(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		blocks := make([]Block, len(fs))
		for i, f := range fs {
			blocks[i] = Block{Seq: f.Seq, CreatedAt: f.CreatedAt, PrevHash: string(f.PrevHash), CurrHash: string(f.CurrHash), ContentType: string(f.ContentType)}
		}
		if again := encode(h, blocks, ps); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs")
		}
	})
}

// TestReset: a Reader reset onto a new stream reads it from its start, whatever was left
// unread of the one before.
func TestReset(t *testing.T) {
	a := encode(Header{PadID: "a", Count: 1, Manifest: []byte(`{"a":1}`)}, []Block{{PrevHash: "p", CurrHash: "c"}}, [][]byte{bytes.Repeat([]byte("x"), 100)})
	b := encode(Header{PadID: "b", Count: 1, Manifest: []byte(`{"b":2}`)}, []Block{{PrevHash: "q", CurrHash: "d"}}, [][]byte{[]byte("yz")})
	r := NewReader(bytes.NewReader(a), bufio.NewReaderSize(nil, 16))
	if _, err := r.Header(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Next(); err != nil { // stop inside the first frame's payload
		t.Fatal(err)
	}
	r.Reset(bytes.NewReader(b))
	h, err := r.Header()
	if err != nil || h.PadID != "b" || string(h.Manifest) != `{"b":2}` {
		t.Fatalf("header after Reset: %+v %v", h, err)
	}
	f, ok, err := r.Next()
	if err != nil || !ok || f.PayloadLen != 2 || string(f.PrevHash) != "q" {
		t.Fatalf("frame after Reset: %+v %v %v", f, ok, err)
	}
	p := make([]byte, 2)
	if err := r.Payload(p, nil); err != nil || string(p) != "yz" {
		t.Fatalf("payload after Reset: %q %v", p, err)
	}
	if _, ok, err := r.Next(); ok || err != nil {
		t.Fatalf("end after Reset: %v %v", ok, err)
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
}
