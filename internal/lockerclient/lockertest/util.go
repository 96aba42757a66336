package lockertest

import (
	"encoding/base64"
	"unicode/utf8"
)

func decode(s string) []byte {
	b, _ := base64.StdEncoding.DecodeString(s)
	return b
}

func encodeB64(p []byte) string { return base64.StdEncoding.EncodeToString(p) }

func utf8Valid(p []byte) bool { return utf8.Valid(p) }
