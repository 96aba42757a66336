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

// args are a call's arguments, parsed in order. The accessors keep the first invalid
// argument in err and return zero values from then on, so a tool reads all it takes and
// checks err once: the error is the first argument's, in the order the tool reads them.
type args struct {
	byName map[string]*value
	err    error
}

// fail records err unless an earlier argument already failed.
func (a *args) fail(err error) {
	if a.err == nil {
		a.err = err
	}
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

// get returns the named argument, nil when absent; null counts as absent only when nullable.
func (a *args) get(name string, required, nullable bool) *value {
	if a.err != nil {
		return nil
	}
	v, ok := a.byName[name]
	if ok && v.kind == kNull && nullable {
		ok = false
	}
	if !ok {
		if required {
			a.fail(argErrorf("missing required argument %q", name))
		}
		return nil
	}
	return v
}

// typed returns a required argument of kind k, described as what ("an object") if it is not.
func (a *args) typed(name string, k kind, what string) *value {
	v := a.get(name, true, false)
	if v != nil && v.kind != k {
		a.fail(argErrorf("%s must be %s, not a %s", name, what, v.typeName()))
		return nil
	}
	return v
}

// str returns a string argument and whether it was given, def when absent.
func (a *args) str(name string, required, nullable bool, def string) (string, bool) {
	v := a.get(name, required, nullable)
	if v == nil {
		return def, false
	}
	if v.kind != kString {
		a.fail(argErrorf("argument %q must be a string, not a %s", name, v.typeName()))
		return "", false
	}
	b, err := utf8Bytes(v.str)
	if err != nil {
		a.fail(argErrorf("argument %q: %v", name, err))
		return "", false
	}
	return string(b), true
}

// reqStr returns a required, non-null string argument.
func (a *args) reqStr(name string) string {
	s, _ := a.str(name, true, false, "")
	return s
}

// optStr returns a nullable string argument, nil when absent or null.
func (a *args) optStr(name string) *string {
	s, ok := a.str(name, false, true, "")
	if !ok {
		return nil
	}
	return &s
}

// integer returns an integer argument, def when absent. Integral numbers written with a
// fraction or exponent (60.0, 6e1) are accepted, as the peer's validation does; strings and
// booleans are not.
func (a *args) integer(name string, required bool, def int) int {
	v := a.get(name, required, false)
	if v == nil {
		return def
	}
	if v.kind != kNumber {
		a.fail(argErrorf("argument %q must be an integer, not a %s", name, v.typeName()))
		return 0
	}
	// The exponent is bounded before big.Rat expands it.
	ok := true
	if i := strings.IndexAny(v.num, "eE"); i >= 0 {
		e, err := strconv.Atoi(v.num[i+1:])
		ok = err == nil && e <= 20 && e >= -20
	}
	var r *big.Rat
	if ok {
		r, ok = new(big.Rat).SetString(v.num)
	}
	if !ok || !r.IsInt() || !r.Num().IsInt64() || r.Num().Int64() > math.MaxInt32 || r.Num().Int64() < math.MinInt32 {
		a.fail(argErrorf("argument %q must be an integer in 32-bit range, not %s", name, v.num))
		return 0
	}
	return int(r.Num().Int64())
}

// payload returns a required block payload argument, encoded by payloadBytes.
func (a *args) payload(name string) []byte {
	v := a.get(name, true, false)
	if v == nil {
		return nil
	}
	b, _, err := payloadBytes(v, name)
	if err != nil {
		a.fail(err)
	}
	return b
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
