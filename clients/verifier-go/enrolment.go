package main

// Vouched passkey enrolment (PROOF-FORMAT §9.1): the identity provider's ID token kept in a
// passkey.registered event, checked against the trust file's identity_providers.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

const (
	idpSkewSeconds     = skewSeconds
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

// enrolmentRefusal says why a passkey.registered event is not vouched for; "" when it is.
func enrolmentRefusal(e event, providers []identityProvider) string {
	data := payload(e)
	evidence, _ := data["evidence"].(map[string]interface{})
	if evidence == nil || evidence["kind"] != "idp" {
		return "the enrolment carries no identity provider's evidence"
	}
	token, _ := evidence["id_token"].(string)
	if e.Actor == nil {
		return "the enrolment's evidence has no ID token, or the event no key or person"
	}
	provider, claims, bad := providerClaims(token, providers, true)
	if bad != nil {
		return bad.message
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
	if claims[provider.subjectClaim()] != *e.Actor {
		return fmt.Sprintf("the identity token names another person than %q", *e.Actor)
	}
	if provider.TenantClaim != "" && claims[provider.TenantClaim] != e.Tenant {
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
