package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

var (
	errTooLarge   = errors.New("body over the limit")
	errClientGone = errors.New("client went away while sending the body")
)

// readCapped reads at most limit bytes of the body. It stops at limit+1 bytes actually
// received, whatever Content-Length claims (chunked or absent lengths are capped the same),
// so an oversized body never costs more than limit+1 bytes of memory.
func readCapped(r *http.Request, limit int) ([]byte, error) {
	if r.ContentLength > int64(limit) {
		return nil, errTooLarge // declared too large: refuse without reading
	}
	size := limit + 1
	if r.ContentLength >= 0 && r.ContentLength < int64(size) {
		size = int(r.ContentLength) + 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(size, 32<<10)))
	n, err := buf.ReadFrom(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		return nil, errClientGone
	}
	if n > int64(limit) {
		return nil, errTooLarge
	}
	return buf.Bytes(), nil
}

// jsonObject decodes a small JSON body that must be one object. Duplicate keys: last wins.
// A body that is not UTF-8 is refused, not repaired: encoding/json would replace each bad
// byte with U+FFFD and accept it, and the peer's parser refuses it (a BOM included).
func jsonObject(body []byte) (map[string]json.RawMessage, bool) {
	if !utf8.Valid(body) {
		return nil, false
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return obj, true
}

// intField reads an optional integer member: absent gives def; JSON integers and integral
// numbers such as 60.0 or 1e2 are accepted (as the peer's validator does); strings, booleans,
// null and fractions are refused. The peer also coerces numeric strings and booleans; no
// known client sends them, so this port does not.
func intField(obj map[string]json.RawMessage, key string, def int64) (int64, bool) {
	raw, ok := obj[key]
	if !ok {
		return def, true
	}
	t := strings.TrimSpace(string(raw))
	if t == "" || !(t[0] == '-' || t[0] >= '0' && t[0] <= '9') {
		return 0, false
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}
