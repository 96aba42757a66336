package lockerclient

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// decodedLen is the exact decoded length the page decoder computes.
func decodedLen(src []byte) int {
	dl := len(src) / 4 * 3
	if dl > 0 && src[len(src)-1] == '=' {
		dl--
		if src[len(src)-2] == '=' {
			dl--
		}
	}
	return dl
}

func checkB64(t *testing.T, src []byte) {
	t.Helper()
	want, werr := stdStrict.DecodeString(string(src))
	if bytes.ContainsAny(src, "\r\n") {
		werr = errB64 // the page decoder refuses newlines before decoding
	}
	if len(src)%4 != 0 {
		werr = errB64
	}
	dst := make([]byte, decodedLen(src))
	gerr := decodeB64(dst, src)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("decodeB64(%q) err=%v, stdlib err=%v", src, gerr, werr)
	}
	if gerr == nil && !bytes.Equal(dst, want) {
		t.Fatalf("decodeB64(%q) = %x, want %x", src, dst, want)
	}
}

func TestDecodeB64(t *testing.T) {
	for _, s := range []string{"", "QQ==", "QUI=", "QUJD", "QUJDRA==", "QR==", "QUJ=", "Q===", "====", "QQ=A", "QUJD\n", "Q", "QU",
		"QUJ", "AAAA", "////", "++++", "-___", "QUJDRA=A", "QU=DRA==", "QUJDRA==QUJD", "\x00\x00\x00\x00", "QUJD\xffQUJD"} {
		checkB64(t, []byte(s))
	}
	for n := 0; n < 200; n++ {
		p := bytes.Repeat([]byte{byte(n), 0xff, 0x10}, n)[:n]
		checkB64(t, []byte(base64.StdEncoding.EncodeToString(p)))
	}
}

func FuzzDecodeB64(f *testing.F) {
	for _, s := range []string{"", "QQ==", "QUI=", "QUJD", "QR==", "QUJDRA=A", "aGVsbG8gd29ybGQ="} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkB64(t, src)
		checkB64(t, []byte(base64.StdEncoding.EncodeToString(src)))
	})
}
