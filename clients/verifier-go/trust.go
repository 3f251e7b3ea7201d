package main

// The trust root: keys with purposes and windows, log origins, witnesses (PROOF-FORMAT §5).

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

type jwk struct {
	Kty       string   `json:"kty"`
	Crv       string   `json:"crv"`
	X         string   `json:"x"`
	Y         string   `json:"y"`
	Kid       string   `json:"kid"`
	Alg       string   `json:"alg"`
	Purposes  []string `json:"purposes"`
	NotBefore *int64   `json:"not_before"`
	NotAfter  *int64   `json:"not_after"`
}

type witnessEntry struct {
	Name string `json:"name"`
	Vkey string `json:"vkey"`
}

type trustRoot struct {
	keys      []jwk
	origins   map[string]bool
	witnesses []cosigner
	quorum    int
	providers []identityProvider
}

type trustFile struct {
	Format string                `json:"format"`
	JWKS   *struct{ Keys []jwk } `json:"jwks"`
	Keys   []jwk                 `json:"keys"`
	Logs   []struct {
		Origin string `json:"origin"`
	} `json:"logs"`
	Witnesses         []witnessEntry     `json:"witnesses"`
	WitnessQuorum     *int               `json:"witness_quorum"`
	IdentityProviders []identityProvider `json:"identity_providers"`
}

func loadTrust(path string) (*trustRoot, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f trustFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s is not JSON: %v", path, err)
	}
	t := &trustRoot{origins: map[string]bool{}, providers: f.IdentityProviders}
	switch {
	case f.Format == "signoff-trust/1" && f.JWKS != nil:
		t.keys = f.JWKS.Keys
	case f.Format == "" && f.Keys != nil:
		t.keys = f.Keys // a JWKS: keys only
	default:
		return nil, fmt.Errorf("%s is neither a signoff-trust/1 file nor a JWKS", path)
	}
	for _, k := range t.keys {
		if tp, err := thumbprint(k); err != nil || tp != k.Kid {
			return nil, fmt.Errorf("key %q: kid is not its RFC 7638 thumbprint", k.Kid)
		}
	}
	for _, l := range f.Logs {
		t.origins[l.Origin] = true
	}
	for _, w := range f.Witnesses {
		c, err := parseCosignerVkey(w.Vkey)
		if err != nil {
			return nil, err
		}
		if c.name != w.Name {
			return nil, fmt.Errorf("witness %q has the vkey of %q", w.Name, c.name)
		}
		t.witnesses = append(t.witnesses, c)
	}
	t.providers = f.IdentityProviders
	t.quorum = len(t.witnesses)
	if f.WitnessQuorum != nil {
		t.quorum = *f.WitnessQuorum
	}
	if t.quorum < 0 || t.quorum > len(t.witnesses) {
		return nil, fmt.Errorf("witness_quorum %d needs that many witnesses", t.quorum)
	}
	return t, nil
}

func thumbprint(k jwk) (string, error) {
	var members map[string]interface{}
	switch k.Kty {
	case "OKP":
		members = map[string]interface{}{"crv": k.Crv, "kty": k.Kty, "x": k.X}
	case "EC":
		members = map[string]interface{}{"crv": k.Crv, "kty": k.Kty, "x": k.X, "y": k.Y}
	default:
		return "", fmt.Errorf("unsupported kty %q", k.Kty)
	}
	text, err := jcs(members)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(text)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

func (k jwk) may(purpose string) bool {
	if len(k.Purposes) == 0 {
		return true
	}
	for _, p := range k.Purposes {
		if p == purpose {
			return true
		}
	}
	return false
}

// windowRefusal says why a signature made at `at` (nil: no signed time) is outside the window.
func (k jwk) windowRefusal(purpose string, at *int64) string {
	if !k.may(purpose) {
		return fmt.Sprintf("key %s may not sign %ss", k.Kid, purpose)
	}
	if at == nil {
		if k.NotAfter != nil {
			return fmt.Sprintf("no signed time to check retired key %s's window", k.Kid)
		}
		return ""
	}
	if k.NotBefore != nil && *at < *k.NotBefore {
		return fmt.Sprintf("signed at %d, before key %s was valid", *at, k.Kid)
	}
	if k.NotAfter != nil && *at >= *k.NotAfter {
		return fmt.Sprintf("signed at %d, after key %s was retired (%d)", *at, k.Kid, *k.NotAfter)
	}
	return ""
}

// A cosignature/v1 (type 0x04) verifier: the log's own timestamped line, or a witness's.
type cosigner struct {
	name string
	key  ed25519.PublicKey
	seen *int64
}

func keyID(name string, kind byte, key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', kind})
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil)[:4])
}

func parseCosignerVkey(text string) (cosigner, error) {
	parts := strings.SplitN(text, "+", 3)
	if len(parts) != 3 {
		return cosigner{}, fmt.Errorf("vkey %q is not name+keyid+base64", text)
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 33 || raw[0] != 0x04 {
		return cosigner{}, fmt.Errorf("vkey %q is not an Ed25519 cosignature/v1 key", text)
	}
	c := cosigner{name: parts[0], key: ed25519.PublicKey(raw[1:])}
	if fmt.Sprintf("%08x", c.KeyHash()) != parts[1] {
		return cosigner{}, fmt.Errorf("vkey %q: key ID does not match", text)
	}
	return c, nil
}

func (c *cosigner) Name() string    { return c.name }
func (c *cosigner) KeyHash() uint32 { return keyID(c.name, 0x04, c.key) }
func (c *cosigner) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	ts := int64(binary.BigEndian.Uint64(sig[:8]))
	var m bytes.Buffer
	fmt.Fprintf(&m, "cosignature/v1\ntime %d\n", ts)
	m.Write(msg)
	if !ed25519.Verify(c.key, m.Bytes(), sig[8:]) {
		return false
	}
	c.seen = &ts
	return true
}

// The log's plain Ed25519 (type 0x01) verifier, built as a signed-note vkey for sumdb/note.
func logVerifier(origin string, key ed25519.PublicKey) (note.Verifier, error) {
	vkey := fmt.Sprintf("%s+%08x+%s", origin, keyID(origin, 0x01, key),
		base64.StdEncoding.EncodeToString(append([]byte{0x01}, key...)))
	return note.NewVerifier(vkey)
}

type verifierList []note.Verifier

func (l verifierList) Verifier(name string, hash uint32) (note.Verifier, error) {
	for _, v := range l {
		if v.Name() == name && v.KeyHash() == hash {
			return v, nil
		}
	}
	return nil, &note.UnknownVerifierError{Name: name, KeyHash: hash}
}
