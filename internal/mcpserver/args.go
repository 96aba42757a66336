package mcpserver

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// argError is an invalid tool call: it becomes a tool error (isError), like a validation
// error of the Python peer's SDK. Nothing has been sent when it is returned.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

func argErrorf(format string, a ...any) error { return &argError{msg: fmt.Sprintf(format, a...)} }

// args are a call's arguments, parsed in order.
type args struct {
	byName map[string]*value
}

// parseArgs parses raw arguments and refuses names outside allowed: a misspelt optional
// argument (say expected_head instead of expected_head_hash) must not silently weaken a check.
func parseArgs(raw []byte, allowed ...string) (*args, error) {
	a := &args{byName: map[string]*value{}}
	if len(strings.TrimSpace(string(raw))) == 0 || string(raw) == "null" {
		return a, nil
	}
	v, err := parseJSON(raw)
	if err != nil {
		return nil, argErrorf("arguments: %v", err)
	}
	if v.kind != kObject {
		return nil, argErrorf("arguments must be an object")
	}
	var unknown []string
	for _, m := range v.members {
		name := string(m.key)
		if !slices.Contains(allowed, name) {
			unknown = append(unknown, strconv.Quote(name))
			continue
		}
		a.byName[name] = m.val
	}
	if len(unknown) > 0 {
		return nil, argErrorf("unknown argument(s) %s; this tool takes %s", strings.Join(unknown, ", "), strings.Join(allowed, ", "))
	}
	return a, nil
}

// get returns the named argument; null counts as absent only when nullable.
func (a *args) get(name string, required, nullable bool) (*value, error) {
	v, ok := a.byName[name]
	if ok && v.kind == kNull && nullable {
		ok = false
	}
	if !ok {
		if required {
			return nil, argErrorf("missing required argument %q", name)
		}
		return nil, nil
	}
	return v, nil
}

// str returns a string argument, def when absent.
func (a *args) str(name string, required, nullable bool, def string) (string, bool, error) {
	v, err := a.get(name, required, nullable)
	if err != nil || v == nil {
		return def, false, err
	}
	if v.kind != kString {
		return "", false, argErrorf("argument %q must be a string, not a %s", name, v.typeName())
	}
	b, err := utf8Bytes(v.str)
	if err != nil {
		return "", false, argErrorf("argument %q: %v", name, err)
	}
	return string(b), true, nil
}

// optStr returns a nullable string argument, nil when absent or null.
func (a *args) optStr(name string) (*string, error) {
	s, ok, err := a.str(name, false, true, "")
	if err != nil || !ok {
		return nil, err
	}
	return &s, nil
}

// integer returns an integer argument, def when absent. Integral numbers written with a
// fraction or exponent (60.0, 6e1) are accepted, as the peer's validation does; strings and
// booleans are not.
func (a *args) integer(name string, required bool, def int) (int, error) {
	v, err := a.get(name, required, false)
	if err != nil || v == nil {
		return def, err
	}
	if v.kind != kNumber {
		return 0, argErrorf("argument %q must be an integer, not a %s", name, v.typeName())
	}
	if i := strings.IndexAny(v.num, "eE"); i >= 0 {
		if e, err := strconv.Atoi(v.num[i+1:]); err != nil || e > 20 || e < -20 {
			return 0, argErrorf("argument %q must be an integer in 32-bit range, not %s", name, v.num)
		}
	}
	r, ok := new(big.Rat).SetString(v.num)
	if !ok || !r.IsInt() || !r.Num().IsInt64() || r.Num().Int64() > math.MaxInt32 || r.Num().Int64() < math.MinInt32 {
		return 0, argErrorf("argument %q must be an integer in 32-bit range, not %s", name, v.num)
	}
	return int(r.Num().Int64()), nil
}

// payloadBytes encodes a block payload as the peer does: an object or list as
// json.dumps, a string as UTF-8.
func payloadBytes(v *value, what string) ([]byte, bool, error) {
	switch v.kind {
	case kObject, kArray:
		b, err := pyDumps(v)
		if err != nil {
			return nil, false, argErrorf("%s: %v", what, err)
		}
		return b, true, nil
	case kString:
		b, err := utf8Bytes(v.str)
		if err != nil {
			return nil, false, argErrorf("%s: %v", what, err)
		}
		return b, false, nil
	}
	return nil, false, argErrorf("%s must be a string, an object or a list, not a %s", what, v.typeName())
}
