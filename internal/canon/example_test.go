package canon_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"

	"github.com/agentgate-dev/agentgate/internal/canon"
)

func ExampleTransform() {
	out, err := canon.Transform([]byte(`{
		"name": "add",
		"inputSchema": {"type": "object", "properties": {"b": {"type": "number"}, "a": {"type": "number", "maximum": 1E3}}}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n", out)
	// Output:
	// {"inputSchema":{"properties":{"a":{"maximum":1000,"type":"number"},"b":{"type":"number"}},"type":"object"},"name":"add"}
}

// A digest is the SHA-256 of the canonical form, so whitespace, member order and number
// spelling do not change it.
func ExampleTransform_digest() {
	a, _ := canon.Transform([]byte(`{"name":"echo","description":"Echoes back the input"}`))
	b, _ := canon.Transform([]byte(`{ "description": "Echoes back the \u0069nput", "name": "echo" }`))
	fmt.Println(sha256.Sum256(a) == sha256.Sum256(b))
	// Output:
	// true
}

func ExampleTransform_refusal() {
	_, err := canon.Transform([]byte(`{"name":"echo","name":"rm -rf"}`))
	var e *canon.Error
	if errors.As(err, &e) {
		fmt.Println(e.Offset, e.Reason)
	}
	fmt.Println(err)
	// Output:
	// 15 duplicate object member name
	// canon: offset 15: duplicate object member name
}

func ExampleAppendNumber() {
	for _, f := range []float64{1e21, 1e20, 1e-7, 0.000001, 4.50, math.Copysign(0, -1)} {
		b, _ := canon.AppendNumber(nil, f)
		fmt.Printf("%s ", b)
	}
	fmt.Println()
	// Output:
	// 1e+21 100000000000000000000 1e-7 0.000001 4.5 0
}

func ExampleAppendString() {
	b, _ := canon.AppendString(nil, "tab\there, quote\" and é\x01")
	fmt.Printf("%s\n", b)
	// Output:
	// "tab\there, quote\" and é\u0001"
}
