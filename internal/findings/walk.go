package findings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// schema walks one JSON schema, scanning every string value and every member name.
func (sc *scanner) schema(ptr string, raw json.RawMessage) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		sc.unscanned(ptr, "the schema is not valid JSON, so none of its text was scanned: read it yourself", excerpt(string(raw), 0, 0))
		return
	}
	sc.value(ptr, v, 0)
}

// schemaNames are the JSON Schema keywords whose members are names the schema defines
// (properties and definitions), read by the model as identifiers.
var schemaNames = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
	"dependentSchemas": true, "dependentRequired": true, "dependencies": true,
}

// keywords are the JSON Schema keywords (2020-12 and draft 7) and the MCP members a schema
// commonly carries; any other member name is scanned as an identifier, since it can carry
// words the model reads ("x-instructions").
var keywords = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`$schema $id $ref $anchor $dynamicRef $dynamicAnchor $vocabulary $comment $defs
		definitions type enum const default examples title description readOnly writeOnly deprecated
		properties patternProperties additionalProperties unevaluatedProperties propertyNames
		required dependentRequired dependentSchemas dependencies minProperties maxProperties
		items prefixItems additionalItems unevaluatedItems contains minContains maxContains minItems maxItems uniqueItems
		allOf anyOf oneOf not if then else format pattern minLength maxLength
		minimum maximum exclusiveMinimum exclusiveMaximum multipleOf
		contentEncoding contentMediaType contentSchema nullable discriminator`) {
		m[k] = true
	}
	return m
}()

func (sc *scanner) value(ptr string, v any, depth int) {
	if depth > MaxDepth {
		sc.unscanned(ptr, fmt.Sprintf("the schema nests deeper than %d levels here; what is below was not scanned", MaxDepth), "")
		return
	}
	switch x := v.(type) {
	case string:
		// The items of "required" are property names.
		sc.text(ptr, x, parentToken(ptr) == "required" && isIndex(lastToken(ptr)))
	case []any:
		for i, e := range x {
			sc.value(ptr+"/"+strconv.Itoa(i), e, depth+1)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		names := schemaNames[lastToken(ptr)]
		for _, k := range keys {
			p := ptr + "/" + escapePointer(k)
			if names || !keywords[k] {
				// A keyword is plain ASCII and carries no words; anything else is a name.
				sc.text(p, k, true)
			}
			sc.value(p, x[k], depth+1)
		}
	}
}

func lastToken(ptr string) string {
	i := strings.LastIndexByte(ptr, '/')
	return ptr[i+1:]
}

func parentToken(ptr string) string {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return ""
	}
	return lastToken(ptr[:i])
}

func isIndex(tok string) bool {
	_, err := strconv.Atoi(tok)
	return err == nil
}

// unscanned records a RuleUnscanned finding; its excerpt shows where scanning stopped.
func (sc *scanner) unscanned(ptr, reason, at string) {
	sc.add(Finding{Rule: RuleUnscanned, Severity: warrant.Warning, Pointer: ptr, Reason: reason, Excerpt: at})
}

// take applies the bounds to one string: it returns the part to scan and false when
// nothing may be scanned at all.
func (sc *scanner) take(ptr, s string) (string, bool) {
	if s == "" {
		return "", false
	}
	sc.strings++
	if sc.strings > MaxStrings {
		if sc.strings == MaxStrings+1 {
			sc.unscanned(ptr, fmt.Sprintf("the definition has more than %d strings and member names; this one and those after it were not scanned", MaxStrings), excerpt(s, 0, 0))
		}
		return "", false
	}
	if sc.budget <= 0 {
		if !sc.overBudget {
			sc.overBudget = true
			sc.unscanned(ptr, fmt.Sprintf("the definition has more than %d bytes of text; neither this text nor any after it was scanned", MaxTargetBytes), excerpt(s, 0, 0))
		}
		return "", false
	}
	orig := s
	if len(s) > MaxFieldBytes {
		s = cut(s, MaxFieldBytes)
		sc.unscanned(ptr, fmt.Sprintf("only the first %d of %d bytes of this text were scanned: read the rest yourself", len(s), len(orig)), excerpt(orig, len(s), len(s)))
	}
	if len(s) > sc.budget {
		s = cut(s, sc.budget)
		sc.overBudget = true
		sc.unscanned(ptr, fmt.Sprintf("the definition has more than %d bytes of text; only the first %d bytes of this one were scanned, and none after it", MaxTargetBytes, len(s)), excerpt(orig, len(s), len(s)))
	}
	sc.budget -= len(s)
	return s, true
}

// cut returns the longest prefix of s of at most n bytes that does not split a
// character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// text applies every rule to one string. ident marks a name (a tool, argument or member
// name), whose words are split at underscores, hyphens and case changes.
func (sc *scanner) text(ptr, s string, ident bool) {
	s, ok := sc.take(ptr, s)
	if !ok {
		return
	}
	tags := sc.hiddenChars(ptr, s)
	sc.phrases(ptr, prepare(s, ident), ident, false)
	if tags != "" {
		sc.phrases(ptr, prepare(tags, false), false, true)
	}
	if !ident {
		sc.padding(ptr, s)
	}
}
