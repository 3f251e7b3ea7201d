package main

// Vouched consent (PROOF-FORMAT §8, issue 22): a device assertion's enrolment before it, the
// policy's device rules, and under `evidence: idp` the identity provider's token, signed by a
// provider the trust file lists and naming exactly this proposal.

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

const authorizationType = "signoff_proposal"
const skewSeconds = 300

// identityProvider is one entry of the trust file's identity_providers (PROOF-FORMAT §2).
type identityProvider struct {
	Issuer string `json:"issuer"`
	JWKS   struct {
		Keys []map[string]interface{} `json:"keys"`
	} `json:"jwks"`
	Audiences    []string `json:"audiences"`
	SubjectClaim string   `json:"subject_claim"`
	TenantClaim  string   `json:"tenant_claim"`
}

func (p *identityProvider) subjectClaim() string {
	if p.SubjectClaim == "" {
		return "sub"
	}
	return p.SubjectClaim
}

// enrolment is a passkey.registered event and the key it enrolled.
type enrolment struct {
	key   interface{}
	event event
}

type rejected struct{ code, message string }

// checkVouched applies the policy's evidence and device rules to each approval of p.
func checkVouched(p *proposal, passkeys map[[2]string]enrolment, trust *trustRoot, where string, r *report) {
	evidence, _ := p.policy["evidence"].(string)
	rule, _ := p.policy["device"].(string)
	for _, e := range p.approvals {
		data := payload(e)
		at := fmt.Sprintf("%s: #%d by %q", where, e.Seq, str(nullable(e.Actor)))
		idp := false
		if data["idp"] != nil {
			facts := map[string]interface{}{"proposal_id": p.id, "tenant": p.tenant, "tool": p.tool, "args_digest": p.digest}
			if bad := verifyIdp(data["idp"], trust.providers, str(nullable(e.Actor)), facts, e.At/1_000_000); bad != nil {
				r.fail(bad.code, "%s: %s", at, bad.message)
			} else {
				idp = true
			}
		} else if evidence == "idp" {
			r.fail("evidence_missing", "%s: the policy needs the identity provider's token", at)
		}
		if data["device"] != nil || rule == "required" {
			continue
		}
		if evidence == "device" && !idp {
			r.fail("device_required", "%s: the policy needs the person's device signature", at)
		} else if rule == "or_retype" && enrolledBefore(passkeys, str(nullable(e.Actor)), e.Seq) {
			r.fail("device_required", "%s: re-typed, but they had enrolled a passkey", at)
		}
	}
}

func enrolledBefore(passkeys map[[2]string]enrolment, who string, seq int64) bool {
	for pair, e := range passkeys {
		if pair[0] == who && e.event.Seq < seq {
			return true
		}
	}
	return false
}

func decodeJSON(part string) (map[string]interface{}, error) {
	raw, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return nil, err
	}
	var out map[string]interface{}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&out); err != nil || out == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return out, nil
}

func verifyIdp(evidence interface{}, providers []identityProvider, subject string, facts map[string]interface{}, decidedAt int64) *rejected {
	ev, _ := evidence.(map[string]interface{})
	token, ok := ev["token"].(string)
	if !ok {
		return &rejected{"evidence_invalid", "the idp evidence carries no token"}
	}
	provider, claims, bad := providerClaims(token, providers, false)
	if bad != nil {
		return bad
	}
	if person := claims[provider.subjectClaim()]; person != subject {
		return &rejected{"evidence_mismatch", fmt.Sprintf("the provider's token is for %v", person)}
	}
	iat, isNumber := claims["iat"].(json.Number)
	issued, err := iat.Int64()
	if !isNumber || err != nil || issued > decidedAt+skewSeconds {
		return &rejected{"evidence_invalid", "the token was issued after the decision"}
	}
	details, _ := claims["authorization_details"].([]interface{})
	var ours []map[string]interface{}
	for _, d := range details {
		if m, ok := d.(map[string]interface{}); ok && m["type"] == authorizationType {
			ours = append(ours, m)
		}
	}
	if len(ours) != 1 {
		return &rejected{"evidence_mismatch", fmt.Sprintf("the token's authorization_details hold %d %s entries, not one", len(ours), authorizationType)}
	}
	for _, name := range []string{"proposal_id", "tenant", "tool", "args_digest"} {
		if ours[0][name] != facts[name] {
			return &rejected{"evidence_mismatch", "the provider's authorization_details name another " + name + " than the log"}
		}
	}
	if v, ok := ours[0]["version"].(json.Number); !ok || strings.ContainsAny(v.String(), ".eE") {
		return &rejected{"evidence_mismatch", "the authorization_details name no version"}
	}
	return nil
}

// providerClaims verifies token with the keys of the provider the trust file lists for its
// issuer (the one ID-token check: approvals' idp evidence and enrolments' ID tokens); with
// audiences, its aud must be one the provider pins (when it pins any).
func providerClaims(token string, providers []identityProvider, audiences bool) (*identityProvider, map[string]interface{}, *rejected) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, nil, &rejected{"evidence_invalid", "the token is not a JWT"}
	}
	header, errH := decodeJSON(parts[0])
	claims, errC := decodeJSON(parts[1])
	signature, errS := base64.RawURLEncoding.DecodeString(parts[2])
	if errH != nil || errC != nil || errS != nil {
		return nil, nil, &rejected{"evidence_invalid", "the token is not a JWT"}
	}
	var provider *identityProvider
	for i := range providers {
		if providers[i].Issuer == claims["iss"] {
			provider = &providers[i]
		}
	}
	if provider == nil {
		return nil, nil, &rejected{"evidence_invalid", fmt.Sprintf("the token's issuer %v is not in the trust file", claims["iss"])}
	}
	verified, candidates := false, 0
	for _, key := range provider.JWKS.Keys {
		if use, ok := key["use"]; (ok && use != "sig") || (header["kid"] != nil && key["kid"] != header["kid"]) {
			continue
		}
		candidates++
		alg := keyAlg(key)
		verified = verified || (header["alg"] == alg && verifyJWS(key, alg, []byte(parts[0]+"."+parts[1]), signature))
	}
	if candidates == 0 {
		return nil, nil, &rejected{"evidence_invalid", fmt.Sprintf("no key %v of %v is in the trust file", header["kid"], claims["iss"])}
	}
	if !verified {
		return nil, nil, &rejected{"evidence_invalid", "the token's signature does not verify with the provider's keys"}
	}
	if _, ok := claims["sub"].(string); !ok {
		return nil, nil, &rejected{"evidence_invalid", "the token does not verify: it names no sub"}
	}
	if audiences && len(provider.Audiences) > 0 {
		named := []interface{}{claims["aud"]}
		if list, ok := claims["aud"].([]interface{}); ok {
			named = list
		}
		match := false
		for _, a := range named {
			for _, want := range provider.Audiences {
				match = match || a == want
			}
		}
		if !match {
			return nil, nil, &rejected{"evidence_invalid", "the token does not verify: Audience doesn't match"}
		}
	}
	return provider, claims, nil
}

func keyAlg(k map[string]interface{}) string {
	if alg, ok := k["alg"].(string); ok {
		return alg
	}
	if k["kty"] == "EC" && k["crv"] == "P-384" {
		return "ES384"
	}
	return map[string]string{"RSA": "RS256", "EC": "ES256", "OKP": "EdDSA"}[str(k["kty"])]
}

func verifyJWS(k map[string]interface{}, alg string, signed, signature []byte) bool {
	digest := sha256.Sum256(signed)
	switch alg {
	case "RS256", "PS256":
		n, errN := b64url(k["n"])
		e, errE := b64url(k["e"])
		if k["kty"] != "RSA" || errN != nil || errE != nil {
			return false
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if alg == "PS256" {
			return rsa.VerifyPSS(pub, crypto.SHA256, digest[:], signature, &rsa.PSSOptions{SaltLength: 32}) == nil
		}
		return rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], signature) == nil
	case "ES256":
		x, errX := b64url(k["x"])
		y, errY := b64url(k["y"])
		if k["kty"] != "EC" || k["crv"] != "P-256" || errX != nil || errY != nil || len(signature) != 64 {
			return false
		}
		pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
		return ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(signature[:32]), new(big.Int).SetBytes(signature[32:]))
	case "ES384":
		x, errX := b64url(k["x"])
		y, errY := b64url(k["y"])
		if k["kty"] != "EC" || k["crv"] != "P-384" || errX != nil || errY != nil || len(signature) != 96 {
			return false
		}
		sum := sha512.Sum384(signed)
		pub := &ecdsa.PublicKey{Curve: elliptic.P384(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
		return ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(signature[:48]), new(big.Int).SetBytes(signature[48:]))
	case "EdDSA":
		x, err := b64url(k["x"])
		if k["kty"] != "OKP" || err != nil || len(x) != ed25519.PublicKeySize {
			return false
		}
		return ed25519.Verify(ed25519.PublicKey(x), signed, signature)
	}
	return false
}
