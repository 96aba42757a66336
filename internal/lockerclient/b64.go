package lockerclient

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
)

// The page decoder spends most of its time in base64 (the daemon sends payloads as standard
// padded base64, a third larger than the bytes). decodeB64 is a table-driven decoder, about
// twice as fast as encoding/base64 here, that accepts exactly what
// base64.StdEncoding.Strict() accepts without newlines: the alphabet A–Z a–z 0–9 + /,
// canonical '=' padding, zero trailing bits. A fuzz test holds it to the standard library.

const b64Invalid = 0xff000000

var b64Tab [4][256]uint32

func init() {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for t := range b64Tab {
		for i := range b64Tab[t] {
			b64Tab[t][i] = b64Invalid
		}
	}
	for v := 0; v < len(alphabet); v++ {
		c := alphabet[v]
		b64Tab[0][c] = uint32(v) << 18
		b64Tab[1][c] = uint32(v) << 12
		b64Tab[2][c] = uint32(v) << 6
		b64Tab[3][c] = uint32(v)
	}
}

var errB64 = errors.New("invalid base64")

var stdStrict = base64.StdEncoding.Strict()

// decodeB64 decodes src into dst, which must hold exactly the decoded length (len(src)/4*3
// less the padding), and reports whether src was valid.
func decodeB64(dst, src []byte) error {
	if len(src)%4 != 0 {
		return errB64
	}
	if len(src) == 0 {
		if len(dst) != 0 {
			return errB64
		}
		return nil
	}
	body := src[:len(src)-4]
	if len(dst) < len(body)/4*3 {
		return errB64
	}
	t0, t1, t2, t3 := &b64Tab[0], &b64Tab[1], &b64Tab[2], &b64Tab[3]
	var acc uint32
	i, j := 0, 0
	// Two groups at a time with one 8-byte store; the store's last two bytes are overwritten
	// by the next group, so this runs while dst has room for them.
	for ; i+8 <= len(body) && j+8 <= len(dst); i, j = i+8, j+6 {
		s := body[i : i+8 : i+8]
		x := t0[s[0]] | t1[s[1]] | t2[s[2]] | t3[s[3]]
		y := t0[s[4]] | t1[s[5]] | t2[s[6]] | t3[s[7]]
		acc |= x | y
		binary.BigEndian.PutUint64(dst[j:j+8:j+8], uint64(x)<<40|uint64(y&0xffffff)<<16)
	}
	for ; i+4 <= len(body); i += 4 {
		s := body[i : i+4 : i+4]
		x := t0[s[0]] | t1[s[1]] | t2[s[2]] | t3[s[3]]
		acc |= x
		d := dst[j : j+3 : j+3]
		d[0], d[1], d[2] = byte(x>>16), byte(x>>8), byte(x)
		j += 3
	}
	if acc&b64Invalid != 0 {
		return errB64
	}
	// The last group may carry padding: the standard library checks it strictly.
	var tail [3]byte
	n, err := stdStrict.Decode(tail[:], src[len(src)-4:])
	if err != nil || len(dst)-j != n {
		return errB64
	}
	copy(dst[j:], tail[:n])
	return nil
}
