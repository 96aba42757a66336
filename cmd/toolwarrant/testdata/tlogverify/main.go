// Command tlogverify checks a proof from `toolwarrant audit prove` with golang.org/x/mod
// alone: tlogverify VKEY PROOF-FILE. docs/transparency-log.md shows it; a test runs it.
package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func main() {
	v, err := note.NewVerifier(os.Args[1]) // the log's published checkpoint verifier key
	check(err)
	b, err := os.ReadFile(os.Args[2])
	check(err)
	head, signed, _ := strings.Cut(string(b), "\n\n") // c2sp.org/tlog-proof@v1
	n, err := note.Open([]byte(signed), note.VerifierList(v))
	check(err)
	cp := strings.Split(n.Text, "\n") // origin, tree size, root hash
	size, _ := strconv.ParseInt(cp[1], 10, 64)
	root, err := tlog.ParseHash(cp[2])
	check(err)
	lines := strings.Split(head, "\n") // c2sp.org/tlog-proof@v1, extra, index, proof…
	body, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(lines[1], "extra "))
	check(err)
	index, err := strconv.ParseInt(strings.TrimPrefix(lines[2], "index "), 10, 64)
	check(err)
	var proof tlog.RecordProof
	for _, l := range lines[3:] {
		h, err := tlog.ParseHash(l)
		check(err)
		proof = append(proof, h)
	}
	check(tlog.CheckRecord(proof, size, root, index, tlog.RecordHash(body)))
	fmt.Printf("entry %d of %s (tree size %d):\n%s\n", index+1, cp[0], size, body)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlogverify:", err)
		os.Exit(1)
	}
}
