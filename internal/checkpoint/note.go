package checkpoint

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// The C2SP checkpoint (c2sp.org/tlog-checkpoint): a signed note (c2sp.org/signed-note)
// whose text is the log's origin, its tree size and the base64 RFC 6962 root hash:
//
//	toolwarrant.aws/123456789012/eu-west-1/prod
//	42
//	mJ0u1t8rYb0q3H4b2W1g1mJ3Jm8u2XmM5m1u6wq3b7E=
//
//	— toolwarrant.aws/123456789012/eu-west-1/prod Az3grl…
//
// signed by the checkpoint key (Ed25519, key name = origin), stored as
// checkpoints/<size>.note beside the legacy JSON checkpoint of the same head, and
// verifiable by any signed-note library given the verifier key
// "<origin>+<key hash>+<base64(0x01 || public key)>". Witness cosignatures
// (c2sp.org/tlog-cosignature, cosignature/v1) are further signature lines of the same
// note, stored in checkpoints/<size>.cosig.

// NoteSuffix and CosigSuffix name a checkpoint note and its witness cosignatures.
const (
	NoteSuffix  = ".note"
	CosigSuffix = ".cosig"
)

// NoteKey returns the object key of the checkpoint note of tree size n in a bucket.
func NoteKey(n int64) string { return Prefix + strconv.FormatInt(n, 10) + NoteSuffix }

// CosigKey returns the object key of the witness cosignatures of tree size n.
func CosigKey(n int64) string { return Prefix + strconv.FormatInt(n, 10) + CosigSuffix }

// MessageSigner is the checkpoint key: an Ed25519 key that signs a message (the note
// text) as pure Ed25519 (RFC 8032), what sumdb/note verifies. keysigner (a file) and
// kmssigner (a KMS ECC_NIST_EDWARDS25519 key, ED25519_SHA_512 over the raw message)
// implement it. Implementations are safe for concurrent use; errors wrap
// signer.ErrUnavailable when the key cannot be used now.
type MessageSigner interface {
	// Public returns the key: an ed25519.PublicKey.
	Public() crypto.PublicKey
	// SignMessage returns the Ed25519 signature of msg.
	SignMessage(ctx context.Context, msg []byte) ([]byte, error)
}

// ErrNote is wrapped for a checkpoint note that does not parse or verify.
var ErrNote = errors.New("not a valid checkpoint note")

// ValidOrigin reports whether origin can name a log and its key: non-empty UTF-8, no
// spaces and no '+' (signed-note key names; tlog-checkpoint recommends a schema-less URL).
func ValidOrigin(origin string) bool {
	return origin != "" && utf8.ValidString(origin) && strings.IndexFunc(origin, unicode.IsSpace) < 0 && !strings.Contains(origin, "+")
}

// VerifierKey returns the signed-note verifier key of the checkpoint key pub under name
// (the origin): the one string a verifier needs.
func VerifierKey(name string, pub crypto.PublicKey) (string, error) {
	k, ok := pub.(ed25519.PublicKey)
	if !ok {
		return "", fmt.Errorf("the checkpoint key must be Ed25519, not %T", pub)
	}
	if !ValidOrigin(name) {
		return "", fmt.Errorf("key name %q: must be non-empty, without spaces or '+'", name)
	}
	return note.NewEd25519VerifierKey(name, k)
}

// Checkpoint text of a tree.
func noteText(origin string, size int64, root tlog.Hash) string {
	return origin + "\n" + strconv.FormatInt(size, 10) + "\n" + base64.StdEncoding.EncodeToString(root[:]) + "\n"
}

func keyHash(name string, alg byte, pub []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', alg})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// SignNote returns the signed checkpoint note of the tree (size, root) of origin, signed
// by s under the key name origin.
func SignNote(ctx context.Context, s MessageSigner, origin string, size int64, root tlog.Hash) ([]byte, error) {
	pub, ok := s.Public().(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("checkpoint note: the checkpoint key must be Ed25519, not %T", s.Public())
	}
	if !ValidOrigin(origin) {
		return nil, fmt.Errorf("checkpoint note: origin %q must be non-empty, without spaces or '+'", origin)
	}
	if size < 0 {
		return nil, fmt.Errorf("checkpoint note: size %d", size)
	}
	text := noteText(origin, size, root)
	sig, err := s.SignMessage(ctx, []byte(text))
	if err != nil {
		return nil, fmt.Errorf("sign checkpoint %d: %w", size, err)
	}
	if len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("sign checkpoint %d: the key returned a %d-byte signature, not Ed25519", size, len(sig))
	}
	if !ed25519.Verify(pub, []byte(text), sig) {
		return nil, fmt.Errorf("sign checkpoint %d: the key's signature does not verify under its public key", size)
	}
	line := make([]byte, 4, 4+len(sig))
	binary.BigEndian.PutUint32(line, keyHash(origin, 1, pub))
	line = append(line, sig...)
	return []byte(text + "\n— " + origin + " " + base64.StdEncoding.EncodeToString(line) + "\n"), nil
}

// Note is a verified checkpoint note.
type Note struct {
	// Origin, Size and Root are the checkpoint.
	Origin string
	Size   int64
	Root   tlog.Hash
	// Text is the signed note text.
	Text string
	// Bytes is the note as stored (text, blank line, signature lines).
	Bytes []byte
	// Witnesses names the witness keys (of those given) whose cosignatures verified.
	Witnesses []string
	// Cosigners are those keys' verifiers (of those given, in the same order), so a
	// caller holding several keys of one name tells them apart.
	Cosigners []note.Verifier
}

// ParseText parses a checkpoint's note text: origin, size, base64 root hash, and no
// extension lines (toolwarrant writes none; tlog-checkpoint does not recommend them).
func ParseText(text string) (origin string, size int64, root tlog.Hash, err error) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return "", 0, root, fmt.Errorf("%w: the text is not three lines (origin, size, root hash)", ErrNote)
	}
	origin = strings.TrimSuffix(lines[0], "\n")
	sz := strings.TrimSuffix(lines[1], "\n")
	size, perr := strconv.ParseInt(sz, 10, 64)
	if !ValidOrigin(origin) || perr != nil || size < 0 || strconv.FormatInt(size, 10) != sz {
		return "", 0, root, fmt.Errorf("%w: origin %q, size %q", ErrNote, origin, sz)
	}
	h, herr := base64.StdEncoding.Strict().DecodeString(strings.TrimSuffix(lines[2], "\n"))
	if herr != nil || len(h) != len(root) {
		return "", 0, root, fmt.Errorf("%w: the root hash is not 32 bytes of base64", ErrNote)
	}
	copy(root[:], h)
	return origin, size, root, nil
}

// OpenNote verifies a checkpoint note under the log's verifier key and, if given, checks
// the cosignatures of witnesses (each a cosignature/v1 or Ed25519 verifier key): Note.
// Witnesses lists those whose signature verified. Unknown signature lines are ignored, as
// signed-note requires; a line of a known key that does not verify is an error.
func OpenNote(b []byte, logKey string, witnesses []note.Verifier) (*Note, error) {
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrNote, MaxFileBytes)
	}
	lv, err := note.NewVerifier(logKey)
	if err != nil {
		return nil, fmt.Errorf("checkpoint key %q: %v", logKey, err)
	}
	vs := append([]note.Verifier{lv}, witnesses...)
	n, err := note.Open(b, note.VerifierList(vs...))
	if err != nil {
		var unv *note.UnverifiedNoteError
		if errors.As(err, &unv) {
			return nil, fmt.Errorf("%w: no signature by the checkpoint key %s", ErrNote, lv.Name())
		}
		return nil, fmt.Errorf("%w: %v", ErrNote, err)
	}
	out := &Note{Text: n.Text, Bytes: b}
	logSigned := false
	for _, s := range n.Sigs {
		if s.Name == lv.Name() && s.Hash == lv.KeyHash() {
			logSigned = true
			continue
		}
		for _, w := range witnesses {
			if s.Name == w.Name() && s.Hash == w.KeyHash() {
				out.Witnesses = append(out.Witnesses, w.Name())
				out.Cosigners = append(out.Cosigners, w)
				break // a key given twice still counts once
			}
		}
	}
	if !logSigned {
		return nil, fmt.Errorf("%w: no signature by the checkpoint key %s", ErrNote, lv.Name())
	}
	if out.Origin, out.Size, out.Root, err = ParseText(n.Text); err != nil {
		return nil, err
	}
	if out.Origin != lv.Name() {
		return nil, fmt.Errorf("%w: origin %q is not the checkpoint key's name %q", ErrNote, out.Origin, lv.Name())
	}
	return out, nil
}

// WithCosignatures returns the note with extra signature lines appended (a witness's
// answer, or a stored .cosig file), dropping lines already present.
func WithCosignatures(noteBytes, sigLines []byte) []byte {
	out := bytes.Clone(noteBytes)
	for _, l := range bytes.SplitAfter(sigLines, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 || !bytes.HasPrefix(l, []byte("— ")) || !bytes.HasSuffix(l, []byte("\n")) {
			continue
		}
		if bytes.Contains(out, l) {
			continue
		}
		out = append(out, l...)
	}
	return out
}

// cosignature/v1 (c2sp.org/tlog-cosignature): a witness's timestamped Ed25519 signature
// over "cosignature/v1\ntime <unix seconds>\n" followed by the checkpoint text, encoded as
// key hash (4) || timestamp (8, big-endian) || signature (64); key type 0x04.
const algCosignatureV1 = 0x04

type cosigVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosigVerifier) Name() string    { return v.name }
func (v *cosigVerifier) KeyHash() uint32 { return v.hash }
func (v *cosigVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	if t == 0 || t > 1<<62 {
		return false
	}
	if _, _, _, err := ParseText(string(msg)); err != nil {
		return false
	}
	return ed25519.Verify(v.key, cosignedMessage(t, msg), sig[8:])
}

// WitnessVerifier parses a witness's verifier key: a cosignature/v1 key
// ("name+hash+base64(0x04 || key)", what litewitness and the transparency-dev witness
// print) or a plain Ed25519 note key (type 0x01).
func WitnessVerifier(vkey string) (note.Verifier, error) {
	parts := strings.SplitN(strings.TrimSpace(vkey), "+", 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("witness key %q: want name+hash+key", vkey)
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) == 0 {
		return nil, fmt.Errorf("witness key %q: the key is not base64", vkey)
	}
	if raw[0] != algCosignatureV1 {
		v, err := note.NewVerifier(strings.TrimSpace(vkey))
		if err != nil {
			return nil, fmt.Errorf("witness key %q: %v", vkey, err)
		}
		return v, nil
	}
	h, err := strconv.ParseUint(parts[1], 16, 32)
	if err != nil || len(parts[1]) != 8 || len(raw) != 1+ed25519.PublicKeySize || !ValidOrigin(parts[0]) {
		return nil, fmt.Errorf("witness key %q: malformed cosignature/v1 key", vkey)
	}
	if keyHash(parts[0], algCosignatureV1, raw[1:]) != uint32(h) {
		return nil, fmt.Errorf("witness key %q: its key hash does not match the key", vkey)
	}
	return &cosigVerifier{name: parts[0], hash: uint32(h), key: ed25519.PublicKey(raw[1:])}, nil
}
