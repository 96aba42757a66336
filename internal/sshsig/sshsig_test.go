package sshsig

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

const ns = "toolwarrant-approval"

// keygen makes an unencrypted key with ssh-keygen and returns its path and public key.
func keygen(t *testing.T, typ string) (string, PublicKey) {
	t.Helper()
	sk := testenv.LookPath(t, "ssh-keygen")
	path := filepath.Join(t.TempDir(), "id_"+typ)
	args := []string{"-q", "-t", typ, "-N", "", "-C", "alice@test", "-f", path}
	if typ == "ecdsa" {
		args = append(args, "-b", "256")
	}
	if out, err := exec.Command(sk, args...).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	line, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, comment, err := ParseAuthorizedKey(string(line))
	if err != nil || comment != "alice@test" {
		t.Fatalf("parse %s.pub: %v (comment %q)", path, err, comment)
	}
	return path, pub
}

// sshVerify runs ssh-keygen -Y verify and reports whether it accepted.
func sshVerify(t *testing.T, pub PublicKey, message, sig []byte) (bool, string) {
	t.Helper()
	sk := testenv.LookPath(t, "ssh-keygen")
	dir := t.TempDir()
	allowed := filepath.Join(dir, "allowed_signers")
	os.WriteFile(allowed, []byte(`alice namespaces="`+ns+`" `+pub.AuthorizedKey()+"\n"), 0o600)
	sigFile := filepath.Join(dir, "statement.sig")
	os.WriteFile(sigFile, sig, 0o600)
	cmd := exec.Command(sk, "-Y", "verify", "-f", allowed, "-I", "alice", "-n", ns, "-s", sigFile)
	cmd.Stdin = bytes.NewReader(message)
	out, err := cmd.CombinedOutput()
	return err == nil, string(out)
}

func TestSignVerifiedBySSHKeygen(t *testing.T) {
	for _, typ := range []string{"ed25519", "ecdsa"} {
		t.Run(typ, func(t *testing.T) {
			path, pub := keygen(t, typ)
			s, err := LoadKeyFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if s.Public().Fingerprint() != pub.Fingerprint() {
				t.Fatal("private and public key differ")
			}
			msg := []byte(`{"decision":"approved","digest":"sha256:00","server":"weather","tool":"get_forecast"}`)
			sig, err := Sign(s, msg, ns)
			if err != nil {
				t.Fatal(err)
			}
			if ok, out := sshVerify(t, pub, msg, sig); !ok {
				t.Fatalf("ssh-keygen -Y verify refused our signature: %s", out)
			}
			tampered := bytes.Clone(msg)
			tampered[len(tampered)-3] ^= 1
			if ok, _ := sshVerify(t, pub, tampered, sig); ok {
				t.Error("ssh-keygen -Y verify accepted the statement after one byte changed")
			}
			if got, err := Verify(sig, msg, ns); err != nil || got.Fingerprint() != pub.Fingerprint() {
				t.Errorf("Verify: %v", err)
			}
			if _, err := Verify(sig, tampered, ns); !errors.Is(err, ErrBadSignature) {
				t.Errorf("Verify of a changed statement: %v", err)
			}
			if _, err := Verify(sig, msg, "other-namespace"); !errors.Is(err, ErrBadSignature) {
				t.Errorf("Verify in another namespace: %v", err)
			}
		})
	}
}

func TestVerifySignatureMadeBySSHKeygen(t *testing.T) {
	sk := testenv.LookPath(t, "ssh-keygen")
	for _, typ := range []string{"ed25519", "ecdsa"} {
		path, pub := keygen(t, typ)
		msgFile := filepath.Join(t.TempDir(), "statement.json")
		msg := []byte(`{"hello":"world"}`)
		os.WriteFile(msgFile, msg, 0o600)
		if out, err := exec.Command(sk, "-Y", "sign", "-f", path, "-n", ns, msgFile).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
		}
		sig, _ := os.ReadFile(msgFile + ".sig")
		got, err := Verify(sig, msg, ns)
		if err != nil || got.Fingerprint() != pub.Fingerprint() {
			t.Errorf("%s: Verify(ssh-keygen's signature) = %v", typ, err)
		}
	}
}

func TestAgentSigner(t *testing.T) {
	agentBin := testenv.LookPath(t, "ssh-agent")
	addBin := testenv.LookPath(t, "ssh-add")
	path, pub := keygen(t, "ed25519")
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agent := exec.Command(agentBin, "-D", "-a", sock)
	stderr, _ := agent.StderrPipe()
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = agent.Process.Kill() // by PID, the agent this test started
		_ = agent.Wait()
	})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ssh-agent did not create its socket")
		}
		time.Sleep(20 * time.Millisecond)
	}
	add := exec.Command(addBin, "-q", path)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}
	s, err := AgentSigner(sock, &pub)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("statement")
	sig, err := Sign(s, msg, ns)
	if err != nil {
		t.Fatal(err)
	}
	if ok, out := sshVerify(t, pub, msg, sig); !ok {
		t.Errorf("ssh-keygen refused the agent's signature: %s", out)
	}
	_, other := keygen(t, "ecdsa")
	if _, err := AgentSigner(sock, &other); err == nil || !strings.Contains(err.Error(), "does not hold") {
		t.Errorf("agent without the key: %v", err)
	}
}

func TestEncryptedKeyRefused(t *testing.T) {
	sk := testenv.LookPath(t, "ssh-keygen")
	path := filepath.Join(t.TempDir(), "id")
	if out, err := exec.Command(sk, "-q", "-t", "ed25519", "-N", "secret passphrase", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if _, err := LoadKeyFile(path); err == nil || !strings.Contains(err.Error(), "ssh-agent") {
		t.Errorf("encrypted key: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(armorBegin + "\nU1NIU0lHAAAAAQ==\n" + armorEnd))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sig, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parses has a key that re-parses from its blob.
		if _, err := ParsePublicKey(sig.PublicKey.Blob); err != nil {
			t.Fatal(err)
		}
		_, _ = Verify(data, []byte("m"), sig.Namespace)
	})
}

// These tests pin what users and stored approvals rely on, independent of how the package
// is built: signatures ssh-keygen made (testdata: public keys and signatures only, no
// private key, so gitleaks has nothing to flag) keep verifying, an Ed25519 signature is
// byte for byte what `ssh-keygen -Y sign` writes, and the error texts the CLI prints stay.

// TestVerifyGolden verifies signatures ssh-keygen 9.2 made over testdata/statement.json in
// namespace toolwarrant-approval, and refuses the RSA one as today (unsupported key type).
func TestVerifyGolden(t *testing.T) {
	msg := readTestdata(t, "statement.json")
	tests := []struct {
		name    string
		wantFP  string
		wantErr error
	}{
		{name: "ed25519", wantFP: "SHA256:h0VeGkDruQKGhmloL50dWU88QShf/UVJsvjwjX7Ty7g"},
		{name: "ecdsa", wantFP: "SHA256:fe/wHGvsCi7KvNEPsGdq+QjZAMM3gDrFOJ/jORu0nxI"},
		{name: "rsa", wantErr: ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sig := readTestdata(t, "statement.json."+tc.name+".sig")
			got, err := Verify(sig, msg, ns)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Verify = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.Fingerprint() != tc.wantFP {
				t.Errorf("fingerprint %s, want %s", got.Fingerprint(), tc.wantFP)
			}
			line := strings.TrimSpace(string(readTestdata(t, "id_"+tc.name+".pub")))
			pub, comment, err := ParseAuthorizedKey(line)
			if err != nil || comment != "testdata-only" {
				t.Fatalf("ParseAuthorizedKey: %v (comment %q)", err, comment)
			}
			if pub.AuthorizedKey()+" testdata-only" != line || pub.Fingerprint() != tc.wantFP {
				t.Errorf("public key round trip: %q %s", pub.AuthorizedKey(), pub.Fingerprint())
			}
			if !bytes.Equal(pub.Blob, got.Blob) || pub.Type != got.Type {
				t.Errorf("the signature's key and the .pub differ")
			}
			if _, err := Verify(sig, append(bytes.Clone(msg), ' '), ns); !errors.Is(err, ErrBadSignature) {
				t.Errorf("Verify of another message: %v", err)
			}
			if _, err := Verify(sig, msg, "toolwarrant-trust"); !errors.Is(err, ErrBadSignature) {
				t.Errorf("Verify in another namespace: %v", err)
			}
		})
	}
}

// TestSignEd25519SameBytesAsSSHKeygen: Ed25519 signing is deterministic, so our armored
// signature must equal ssh-keygen's to the byte.
func TestSignEd25519SameBytesAsSSHKeygen(t *testing.T) {
	sk := testenv.LookPath(t, "ssh-keygen")
	path, _ := keygen(t, "ed25519")
	msgFile := filepath.Join(t.TempDir(), "statement.json")
	msg := readTestdata(t, "statement.json")
	if err := os.WriteFile(msgFile, msg, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sk, "-Y", "sign", "-f", path, "-n", ns, msgFile).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
	}
	want, err := os.ReadFile(msgFile + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Sign(s, msg, ns)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Sign:\n%s\nssh-keygen -Y sign:\n%s", got, want)
	}
}

// TestErrorTexts pins the messages the CLI shows a person who gave the wrong key.
func TestErrorTexts(t *testing.T) {
	rsaLine := strings.TrimSpace(string(readTestdata(t, "id_rsa.pub")))
	edLine := strings.TrimSpace(string(readTestdata(t, "id_ed25519.pub")))
	tests := []struct {
		name string
		do   func() error
		want string
	}{
		{"not a key line", func() error { _, _, err := ParseAuthorizedKey("hello"); return err },
			"not an SSH public key line (TYPE BASE64 [comment])"},
		{"rsa key", func() error { _, _, err := ParseAuthorizedKey(rsaLine); return err },
			`unsupported SSH key type (use ssh-ed25519 or ecdsa-sha2-nistp256): "ssh-rsa"`},
		{"type mismatch", func() error {
			_, _, err := ParseAuthorizedKey("ecdsa-sha2-nistp256" + strings.TrimPrefix(edLine, "ssh-ed25519"))
			return err
		}, "SSH public key: line says ecdsa-sha2-nistp256, key is ssh-ed25519"},
		// Options before the type are refused (the text past the prefix is base64's).
		{"options", func() error { _, _, err := ParseAuthorizedKey(`restrict ` + edLine); return err },
			"SSH public key: "},
		{"not pem", func() error { _, err := ParsePrivateKey([]byte(edLine)); return err },
			"not an OpenSSH private key (BEGIN OPENSSH PRIVATE KEY)"},
		{"no agent", func() error { _, err := AgentSigner("", nil); return err },
			"no ssh-agent: SSH_AUTH_SOCK is not set"},
		{"empty namespace", func() error { _, err := Sign(nil, []byte("m"), ""); return err },
			"sshsig: empty namespace"},
		{"not armored", func() error { _, err := Verify([]byte("x"), []byte("m"), ns); return err },
			"malformed SSH signature: no -----BEGIN SSH SIGNATURE----- line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if err == nil || err.Error() != tc.want && !(strings.HasSuffix(tc.want, ": ") && strings.HasPrefix(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestEncryptedKeyText(t *testing.T) {
	sk := testenv.LookPath(t, "ssh-keygen")
	path := filepath.Join(t.TempDir(), "id")
	if out, err := exec.Command(sk, "-q", "-t", "ed25519", "-N", "secret passphrase", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	const want = "the key file is passphrase-protected; add it to ssh-agent (ssh-add) and use the agent instead"
	if _, err := LoadKeyFile(path); err == nil || err.Error() != want {
		t.Errorf("encrypted key: %v, want %q", err, want)
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
