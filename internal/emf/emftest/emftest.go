// Package emftest checks Embedded Metric Format log lines against the specification, written
// apart from package emf so that it can judge that writer (and anything else that claims to
// write EMF): a test hands it a function's log output and gets back the metric values
// CloudWatch would extract, or the rule the line breaks.
package emftest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Metrics is what CloudWatch would extract from one EMF line's first directive.
type Metrics struct {
	// Namespace of the directive.
	Namespace string
	// Dimensions maps each dimension of the (first) dimension set to its value.
	Dimensions map[string]string
	// Values maps each metric name to its value (the sum, for an array of values).
	Values map[string]float64
	// Units maps each metric name to its declared unit ("" when none).
	Units map[string]string
	// Timestamp is the _aws.Timestamp, milliseconds since the epoch.
	Timestamp int64
	// Members are all top-level members, decoded (properties included).
	Members map[string]any
}

// Check parses one line (one JSON object, optionally ending in a newline) as EMF and checks
// the rules CloudWatch applies before it extracts anything: an _aws object with an integer
// Timestamp and a non-empty CloudWatchMetrics array; each directive with a Namespace, a
// Dimensions array of arrays of names, each name a top-level string member, and a Metrics
// array of {Name, Unit?}, each Name a top-level number (or array of numbers).
func Check(line []byte) (Metrics, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if bytes.ContainsAny(line, "\n\r") {
		return Metrics{}, errors.New("emftest: an EMF record must be a single line")
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var top map[string]any
	if err := d.Decode(&top); err != nil {
		return Metrics{}, fmt.Errorf("emftest: not a JSON object: %w", err)
	}
	if d.More() {
		return Metrics{}, errors.New("emftest: more than one JSON value on the line")
	}
	aws, ok := top["_aws"].(map[string]any)
	if !ok {
		return Metrics{}, errors.New("emftest: no _aws object")
	}
	ts, ok := aws["Timestamp"].(json.Number)
	if !ok {
		return Metrics{}, errors.New("emftest: _aws.Timestamp is not a number")
	}
	ms, err := ts.Int64()
	if err != nil || ms <= 0 {
		return Metrics{}, fmt.Errorf("emftest: _aws.Timestamp %s is not a positive integer (milliseconds)", ts)
	}
	dirs, ok := aws["CloudWatchMetrics"].([]any)
	if !ok || len(dirs) == 0 {
		return Metrics{}, errors.New("emftest: _aws.CloudWatchMetrics is not a non-empty array")
	}
	out := Metrics{Timestamp: ms, Members: top}
	for i, raw := range dirs {
		dir, ok := raw.(map[string]any)
		if !ok {
			return Metrics{}, fmt.Errorf("emftest: directive %d is not an object", i)
		}
		ns, ok := dir["Namespace"].(string)
		if !ok || ns == "" || len(ns) > 255 {
			return Metrics{}, fmt.Errorf("emftest: directive %d: Namespace %v is not a name of 1-255 characters", i, dir["Namespace"])
		}
		sets, ok := dir["Dimensions"].([]any)
		if !ok {
			return Metrics{}, fmt.Errorf("emftest: directive %d: Dimensions is not an array", i)
		}
		dims := map[string]string{}
		for j, rs := range sets {
			set, ok := rs.([]any)
			if !ok || len(set) > 30 {
				return Metrics{}, fmt.Errorf("emftest: directive %d: dimension set %d is not an array of at most 30 names", i, j)
			}
			for _, rn := range set {
				n, ok := rn.(string)
				if !ok {
					return Metrics{}, fmt.Errorf("emftest: directive %d: dimension set %d holds %v, not a name", i, j, rn)
				}
				v, ok := top[n].(string)
				if !ok || v == "" {
					return Metrics{}, fmt.Errorf("emftest: dimension %s has no non-empty string member", n)
				}
				if j == 0 {
					dims[n] = v
				}
			}
		}
		ms, ok := dir["Metrics"].([]any)
		if !ok || len(ms) == 0 || len(ms) > 100 {
			return Metrics{}, fmt.Errorf("emftest: directive %d: Metrics is not an array of 1-100 metrics", i)
		}
		values, units := map[string]float64{}, map[string]string{}
		for _, rm := range ms {
			m, ok := rm.(map[string]any)
			if !ok {
				return Metrics{}, fmt.Errorf("emftest: directive %d: metric %v is not an object", i, rm)
			}
			name, ok := m["Name"].(string)
			if !ok || name == "" {
				return Metrics{}, fmt.Errorf("emftest: directive %d: metric without a Name", i)
			}
			if u, present := m["Unit"]; present {
				if s, ok := u.(string); ok {
					units[name] = s
				} else {
					return Metrics{}, fmt.Errorf("emftest: metric %s: Unit %v is not a string", name, u)
				}
			}
			v, err := value(top[name])
			if err != nil {
				return Metrics{}, fmt.Errorf("emftest: metric %s: %w", name, err)
			}
			values[name] = v
		}
		if i == 0 {
			out.Namespace, out.Dimensions, out.Values, out.Units = ns, dims, values, units
		}
	}
	return out, nil
}

// value is a metric member's value: a number, or the sum of an array of numbers.
func value(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			return 0, fmt.Errorf("value %s is not a finite number", x)
		}
		return f, nil
	case []any:
		var sum float64
		for _, e := range x {
			f, err := value(e)
			if err != nil {
				return 0, err
			}
			sum += f
		}
		if len(x) == 0 {
			return 0, errors.New("empty array of values")
		}
		return sum, nil
	case nil:
		return 0, errors.New("no top-level member holds its value")
	default:
		return 0, fmt.Errorf("value %v is not a number", v)
	}
}

// Lines returns every EMF record in a log (one JSON object per line; lines without an _aws
// member, such as ordinary slog lines, are skipped), each checked as Check does.
func Lines(log []byte) ([]Metrics, error) {
	var out []Metrics
	s := bufio.NewScanner(bytes.NewReader(log))
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		line := s.Bytes()
		if !bytes.Contains(line, []byte(`"_aws"`)) {
			continue
		}
		m, err := Check(line)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, s.Err()
}
