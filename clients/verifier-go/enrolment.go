package main

// Vouched passkey enrolment (PROOF-FORMAT §9.1): the identity provider's ID token kept in a
// passkey.registered event, checked against the trust file's identity_providers.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

const (
	idpSkewSeconds     = 120
	freshSignInSeconds = 600
)

func enrolmentNonce(tenant, subject, credentialID string, publicKey interface{}) string {
	doc, _ := jcs(map[string]interface{}{
		"credential_id": credentialID, "public_key": publicKey,
		"purpose": "signoff-passkey-enrolment", "subject": subject, "tenant": tenant,
	})
	sum := sha256.Sum256(doc)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func jwtPart(part string) map[string]interface{} {
	raw, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return nil
	}
	var out map[string]interface{}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&out) != nil {
		return nil
	}
	return out
}

func number(v interface{}) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

func idTokenVerifies(alg interface{}, key map[string]interface{}, input, signature []byte) bool {
	switch alg {
	case "RS256", "EdDSA":
		return verifyWithJWK(key, input, signature) == nil
	case "ES256":
		x, errX := b64url(key["x"])
		y, errY := b64url(key["y"])
		if key["crv"] != "P-256" || errX != nil || errY != nil || len(signature) != 64 {
			return false
		}
		pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
		digest := sha256.Sum256(input)
		r, s := new(big.Int).SetBytes(signature[:32]), new(big.Int).SetBytes(signature[32:])
		return ecdsa.Verify(pub, digest[:], r, s)
	}
	return false
}

// enrolmentRefusal says why a passkey.registered event is not vouched for; "" when it is.
func enrolmentRefusal(e event, providers []map[string]interface{}) string {
	data := payload(e)
	evidence, _ := data["evidence"].(map[string]interface{})
	if evidence == nil || evidence["kind"] != "idp" {
		return "the enrolment carries no identity provider's evidence"
	}
	token, _ := evidence["id_token"].(string)
	parts := strings.Split(token, ".")
	if len(parts) != 3 || e.Actor == nil {
		return "the identity token is not a JWT"
	}
	header, claims := jwtPart(parts[0]), jwtPart(parts[1])
	signature, err := base64.RawURLEncoding.DecodeString(parts[2])
	if header == nil || claims == nil || err != nil {
		return "the identity token is not a JWT"
	}
	var provider map[string]interface{}
	for _, p := range providers {
		if p["issuer"] == claims["iss"] {
			provider = p
		}
	}
	if provider == nil {
		return fmt.Sprintf("the identity token's issuer %v is not in the trust file", claims["iss"])
	}
	jwks, _ := provider["jwks"].(map[string]interface{})
	keys, _ := jwks["keys"].([]interface{})
	verified := false
	for _, k := range keys {
		key, _ := k.(map[string]interface{})
		if key != nil && (header["kid"] == nil || key["kid"] == header["kid"]) &&
			idTokenVerifies(header["alg"], key, []byte(parts[0]+"."+parts[1]), signature) {
			verified = true
		}
	}
	if !verified {
		return "the identity token's signature does not verify with the provider's"
	}
	if audiences, _ := provider["audiences"].([]interface{}); len(audiences) > 0 {
		named := []interface{}{claims["aud"]}
		if list, ok := claims["aud"].([]interface{}); ok {
			named = list
		}
		match := false
		for _, a := range named {
			for _, want := range audiences {
				match = match || a == want
			}
		}
		if !match {
			return "the identity token does not verify: Audience doesn't match"
		}
	}
	at := float64(e.At / 1_000_000)
	iat, okIat := number(claims["iat"])
	exp, okExp := number(claims["exp"])
	if !okIat || !okExp {
		return "the identity token has no numeric iat and exp"
	}
	if at < iat-idpSkewSeconds || at > exp+idpSkewSeconds {
		return "the log recorded the identity token outside its lifetime"
	}
	subjectClaim, _ := provider["subject_claim"].(string)
	if subjectClaim == "" {
		subjectClaim = "sub"
	}
	if claims[subjectClaim] != *e.Actor {
		return fmt.Sprintf("the identity token names another person than %q", *e.Actor)
	}
	if tenantClaim, _ := provider["tenant_claim"].(string); tenantClaim != "" && claims[tenantClaim] != e.Tenant {
		return fmt.Sprintf("the identity token names another tenant than %q", e.Tenant)
	}
	if claims["nonce"] != enrolmentNonce(e.Tenant, *e.Actor, fmt.Sprint(data["credential_id"]), data["public_key"]) {
		return "the ID token was issued for another credential or person (nonce)"
	}
	authTime, ok := claims["auth_time"].(json.Number)
	seconds, err := authTime.Int64()
	if !ok || err != nil || at-float64(seconds) < -idpSkewSeconds || at-float64(seconds) > freshSignInSeconds {
		return "the ID token does not show a fresh sign-in just before the enrolment (auth_time)"
	}
	return ""
}
