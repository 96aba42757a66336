package padwire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// MediaType is the binary form's media type.
const MediaType = "application/vnd.agentgate.pad-blocks"

const (
	magic   = "AGPB"
	version = 2
	// minFrame is a frame's length without hashes, content type and payload.
	minFrame = 4 + 8 + 1 + 1 + 2
)

// Header is a stream's header.
type Header struct {
	PadID                        string
	From, To, Count, TotalBlocks uint32
	// Manifest is the pad's manifest as GET /manifest would serve it (a JSON object),
	// taken from the same pad record as the blocks: a reader needs no second request.
	Manifest []byte
}

// Block is one block as framed: the payload is carried apart (see [AppendBlock]).
type Block struct {
	Seq                uint32
	CreatedAt          int64
	PrevHash, CurrHash string
	ContentType        string
}

// Fits reports whether h can be framed (its pad_id and manifest fit u16 lengths).
func (h Header) Fits() bool {
	return len(h.PadID) <= math.MaxUint16 && len(h.Manifest) <= math.MaxUint16
}

// Fits reports whether b with a payload of n bytes can be framed.
func (b Block) Fits(n int) bool {
	return len(b.PrevHash) <= math.MaxUint8 && len(b.CurrHash) <= math.MaxUint8 && len(b.ContentType) <= math.MaxUint16 &&
		int64(minFrame+len(b.PrevHash)+len(b.CurrHash)+len(b.ContentType))+int64(n) <= math.MaxUint32
}

// HeaderSize is the encoded size of h.
func HeaderSize(h Header) int { return 5 + 2 + len(h.PadID) + 16 + 2 + len(h.Manifest) }

// BlockSize is the encoded size of b's frame with a payload of n bytes.
func BlockSize(b Block, n int) int {
	return 4 + minFrame + len(b.PrevHash) + len(b.CurrHash) + len(b.ContentType) + n
}

// EndSize is the size of the end mark.
const EndSize = 4

// AppendHeader appends h (which must fit).
func AppendHeader(dst []byte, h Header) []byte {
	dst = append(dst, magic...)
	dst = append(dst, version)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(h.PadID)))
	dst = append(dst, h.PadID...)
	for _, v := range [...]uint32{h.From, h.To, h.Count, h.TotalBlocks} {
		dst = binary.BigEndian.AppendUint32(dst, v)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(h.Manifest)))
	return append(dst, h.Manifest...)
}

// AppendBlock appends b's frame with payload (which must fit).
func AppendBlock(dst []byte, b Block, payload []byte) []byte {
	n := BlockSize(b, len(payload)) - 4
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = binary.BigEndian.AppendUint32(dst, b.Seq)
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.CreatedAt))
	dst = append(dst, byte(len(b.PrevHash)))
	dst = append(dst, b.PrevHash...)
	dst = append(dst, byte(len(b.CurrHash)))
	dst = append(dst, b.CurrHash...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(b.ContentType)))
	dst = append(dst, b.ContentType...)
	return append(dst, payload...)
}

// AppendEnd appends the end mark.
func AppendEnd(dst []byte) []byte { return append(dst, 0, 0, 0, 0) }

// ErrFormat is a stream that is not a well-formed padwire stream.
var ErrFormat = errors.New("padwire: malformed stream")

func formatError(what string) error { return fmt.Errorf("%w: %s", ErrFormat, what) }

// Reader decodes a stream as it arrives. A stream that ends early (io.EOF or
// io.ErrUnexpectedEOF from the underlying reader) or holds anything malformed is an
// ErrFormat; other errors of the underlying reader are returned as they are. A caller
// that must tell a cut connection from a short stream watches its own reader.
type Reader struct {
	r       *bufio.Reader
	payload int // bytes of the current frame's payload not yet read
	// scratch holds the current frame's hashes and content type.
	scratch [255 + 255 + math.MaxUint16]byte
}

// NewReader returns a Reader on r, buffered by br (reset onto r: pass a reused one).
func NewReader(r io.Reader, br *bufio.Reader) *Reader {
	br.Reset(r)
	return &Reader{r: br}
}

// Reset makes rd read a new stream from r, reusing its buffer and scratch space (a
// Reader is about 66 KB; a reader of many streams keeps one).
func (r *Reader) Reset(src io.Reader) {
	r.r.Reset(src)
	r.payload = 0
}

func (r *Reader) full(p []byte) error {
	_, err := io.ReadFull(r.r, p)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		// A clean end of the body before the stream's end: the stream is short. (A
		// transport that knows the body was cut reports its own error, not io.EOF.)
		return formatError("the stream ends early")
	}
	return err
}

// Header reads the stream's header.
func (r *Reader) Header() (Header, error) {
	var b [7]byte
	if err := r.full(b[:]); err != nil {
		return Header{}, err
	}
	if string(b[:4]) != magic || b[4] != version {
		return Header{}, formatError("not a version 2 pad-blocks stream")
	}
	id := make([]byte, binary.BigEndian.Uint16(b[5:]))
	if err := r.full(id); err != nil {
		return Header{}, err
	}
	var n [18]byte
	if err := r.full(n[:]); err != nil {
		return Header{}, err
	}
	m := make([]byte, binary.BigEndian.Uint16(n[16:]))
	if err := r.full(m); err != nil {
		return Header{}, err
	}
	return Header{PadID: string(id), From: binary.BigEndian.Uint32(n[0:]), To: binary.BigEndian.Uint32(n[4:]),
		Count: binary.BigEndian.Uint32(n[8:]), TotalBlocks: binary.BigEndian.Uint32(n[12:]), Manifest: m}, nil
}

// Frame is a frame's members; the strings alias the Reader's scratch until the next call.
type Frame struct {
	Seq                uint32
	CreatedAt          int64
	PrevHash, CurrHash []byte
	ContentType        []byte
	// PayloadLen is the size of the payload that follows: read it with Payload or Skip.
	PayloadLen int
}

// Next reads the next frame's members, up to its payload; ok is false at the end mark.
// The previous frame's payload must have been consumed.
func (r *Reader) Next() (f Frame, ok bool, err error) {
	if r.payload != 0 {
		return f, false, errors.New("padwire: the previous payload was not consumed")
	}
	var b [4]byte
	if err := r.full(b[:]); err != nil {
		return f, false, err
	}
	n := int(binary.BigEndian.Uint32(b[:]))
	if n == 0 {
		return f, false, nil
	}
	if n < minFrame {
		return f, false, formatError("a frame is shorter than its fixed members")
	}
	var fx [13]byte
	if err := r.full(fx[:]); err != nil {
		return f, false, err
	}
	f.Seq = binary.BigEndian.Uint32(fx[0:])
	f.CreatedAt = int64(binary.BigEndian.Uint64(fx[4:]))
	pl := int(fx[12])
	at := 0
	read := func(k int) ([]byte, error) {
		s := r.scratch[at : at+k]
		at += k
		return s, r.full(s)
	}
	if f.PrevHash, err = read(pl); err != nil {
		return f, false, err
	}
	if err := r.full(b[:1]); err != nil {
		return f, false, err
	}
	if f.CurrHash, err = read(int(b[0])); err != nil {
		return f, false, err
	}
	if err := r.full(b[:2]); err != nil {
		return f, false, err
	}
	if f.ContentType, err = read(int(binary.BigEndian.Uint16(b[:2]))); err != nil {
		return f, false, err
	}
	f.PayloadLen = n - minFrame - at
	if f.PayloadLen < 0 {
		return f, false, formatError("a frame's members overrun its length")
	}
	r.payload = f.PayloadLen
	return f, true, nil
}

// Payload reads the current frame's payload into dst (len(dst) == PayloadLen), handing
// each piece to w as it arrives (w may be nil).
func (r *Reader) Payload(dst []byte, w io.Writer) error {
	if len(dst) != r.payload {
		return errors.New("padwire: payload buffer of the wrong size")
	}
	for len(dst) > 0 {
		n, err := r.r.Read(dst)
		if n > 0 && w != nil {
			_, _ = w.Write(dst[:n])
		}
		dst = dst[n:]
		r.payload -= n
		if err != nil && len(dst) > 0 {
			if errors.Is(err, io.EOF) {
				return formatError("the stream ends early")
			}
			return err
		}
	}
	return nil
}

// Skip discards the current frame's payload.
func (r *Reader) Skip() error {
	n, err := r.r.Discard(r.payload)
	r.payload -= n
	if err != nil {
		if errors.Is(err, io.EOF) {
			return formatError("the stream ends early")
		}
		return err
	}
	return nil
}

// End checks that nothing follows the end mark.
func (r *Reader) End() error {
	if _, err := r.r.ReadByte(); err == nil {
		return formatError("data after the end mark")
	} else if !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
