package main

// Per-proposal checks (PROOF-FORMAT §8) and device assertions (§9).

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strings"
)

type proposal struct {
	id     string
	tenant string
	tool   interface{}
	policy map[string]interface{}
	digest interface{}
	// previewDigest is the preview_digest proposal.created recorded (what SPC must have shown).
	previewDigest interface{}
	approvals     []event
	executed      []event
	requester     *string
}

func checkProposals(events []event, trust *trustRoot, r *report) {
	proposals := map[string]*proposal{}
	var order []string
	passkeys := map[[2]string]enrolment{}
	for _, e := range events {
		data := payload(e)
		if e.Kind == "passkey.registered" && e.Actor != nil {
			passkeys[[2]string{*e.Actor, fmt.Sprint(data["credential_id"])}] = enrolment{data["public_key"], e}
		}
		if e.ProposalID == nil {
			continue
		}
		pid := *e.ProposalID
		if e.Kind == "proposal.created" {
			policy, _ := data["policy"].(map[string]interface{})
			if policy == nil {
				policy = map[string]interface{}{}
			}
			if _, seen := proposals[pid]; !seen {
				order = append(order, pid)
			}
			proposals[pid] = &proposal{id: pid, tenant: e.Tenant, tool: data["tool"], policy: policy, digest: data["args_digest"], previewDigest: data["preview_digest"]}
			continue
		}
		p := proposals[pid]
		if p == nil {
			continue
		}
		switch {
		case e.Kind == "decision.approved":
			p.approvals = append(p.approvals, e)
		case e.Kind == "token.issued":
			if s, ok := data["subject"].(string); ok {
				p.requester = &s
			} else {
				p.requester = nil
			}
		case (e.Kind == "token.consumed" || strings.HasPrefix(e.Kind, "execution.")) && e.Kind != "execution.started":
			p.executed = append(p.executed, e)
		}
	}
	for _, pid := range order {
		checkOne(proposals[pid], passkeys, trust, r)
	}
}

func checkOne(p *proposal, passkeys map[[2]string]enrolment, trust *trustRoot, r *report) {
	where := "proposal " + p.id
	for _, e := range p.approvals {
		if payload(e)["args_digest"] != p.digest {
			r.fail("approval_digest_mismatch", "%s: #%d approved another", where, e.Seq)
		}
	}
	for _, e := range p.executed {
		data := payload(e)
		digest, present := data["executed_digest"]
		if !present {
			digest = data["args_digest"]
		}
		if digest != nil && digest != p.digest {
			r.fail("executed_digest_mismatch", "%s: #%d (%s) ran digest %v", where, e.Seq, e.Kind, digest)
		}
	}
	role, _ := p.policy["role"].(string)
	_, hasRole := p.policy["role"].(string)
	confirms, _ := p.policy["requester_confirms"].(bool)
	seen := map[string]bool{}
	steps := map[string]map[string]bool{}
	for _, e := range p.approvals {
		step := str(payload(e)["step"])
		if e.Actor == nil || seen[*e.Actor] {
			r.fail("duplicate_approver", "%s: #%d by the same person again", where, e.Seq)
			continue
		}
		person := *e.Actor
		seen[person] = true
		switch {
		case step == "requester" && confirms:
			if p.requester != nil && person != *p.requester {
				r.fail("separation_of_duties", "%s: %q confirmed as requester", where, person)
			}
		case !hasRole || step != "role:"+role:
			r.fail("approval_role_mismatch", "%s: %q approved as %q", where, person, step)
			continue
		case p.requester != nil && person == *p.requester:
			r.fail("separation_of_duties", "%s: the requester approved as role holder", where)
		}
		if steps[step] == nil {
			steps[step] = map[string]bool{}
		}
		steps[step][person] = true
	}
	if len(p.executed) > 0 && !complete(p, steps, hasRole, role, confirms) {
		r.fail("executed_without_approval", "%s: executed before its policy was met", where)
	}
	checkDevices(p, passkeys, trust, where, r)
	checkVouched(p, passkeys, trust, where, r)
}

func complete(p *proposal, steps map[string]map[string]bool, hasRole bool, role string, confirms bool) bool {
	if confirms && len(steps["requester"]) == 0 {
		return false
	}
	if !hasRole {
		return true
	}
	needed := int64(1)
	if n, ok := p.policy["approvals"].(json.Number); ok {
		if v, err := n.Int64(); err == nil && v != 0 {
			needed = v
		}
	}
	return int64(len(steps["role:"+role])) >= needed
}

func checkDevices(p *proposal, passkeys map[[2]string]enrolment, trust *trustRoot, where string, r *report) {
	required := p.policy["device"] == "required"
	for _, e := range p.approvals {
		device, _ := payload(e)["device"].(map[string]interface{})
		if device == nil {
			if required {
				r.fail("device_signature_missing", "%s: #%d has no device", where, e.Seq)
			}
			continue
		}
		if err := verifyAssertion(device, p.id, str(p.digest), str(nullable(e.Actor)), e.Tenant, p.previewDigest); err != nil {
			r.fail("device_signature_invalid", "%s: #%d: %v", where, e.Seq, err)
			continue
		}
		enrolled, ok := passkeys[[2]string{str(nullable(e.Actor)), fmt.Sprint(device["credential_id"])}]
		if !ok || enrolled.event.Seq > e.Seq {
			r.fail("device_enrolment_missing", "%s: #%d: the passkey was enrolled nowhere before it", where, e.Seq)
		} else if !reflect.DeepEqual(enrolled.key, device["public_key"]) {
			r.fail("device_key_unknown", "%s: #%d used a key never enrolled", where, e.Seq)
		} else if why := enrolmentRefusal(enrolled.event, trust.providers); why != "" {
			r.fail("device_enrolment_unvouched", "%s: #%d: %s", where, e.Seq, why)
		}
	}
}

func b64url(v interface{}) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(str(v))
}

func verifyAssertion(d map[string]interface{}, proposalID, digest, subject, tenant string, previewDigest interface{}) error {
	for _, name := range []string{"credential_id", "public_key", "authenticator_data", "client_data_json", "signature", "nonce", "rp_id", "origin"} {
		if d[name] == nil || d[name] == "" {
			return fmt.Errorf("the assertion lacks %s", name)
		}
	}
	version := int64(0)
	if n, ok := d["version"].(json.Number); ok {
		version, _ = n.Int64()
	}
	doc, _ := jcs(map[string]interface{}{
		"proposal_id": proposalID, "version": version, "args_digest": digest,
		"decision": "approve", "nonce": str(d["nonce"]), "subject": subject, "tenant": tenant,
	})
	challenge := sha256.Sum256(doc)
	rawClient, err := b64url(d["client_data_json"])
	if err != nil {
		return fmt.Errorf("clientDataJSON is not base64url")
	}
	var client map[string]interface{}
	if json.Unmarshal(rawClient, &client) != nil {
		return fmt.Errorf("clientDataJSON is not JSON")
	}
	if client["type"] != "webauthn.get" && client["type"] != "payment.get" {
		return fmt.Errorf("clientDataJSON is not from an assertion")
	}
	if client["challenge"] != base64.RawURLEncoding.EncodeToString(challenge[:]) {
		return fmt.Errorf("the device signed another challenge than this decision's")
	}
	if client["origin"] != d["origin"] {
		return fmt.Errorf("the device signed for origin %v", client["origin"])
	}
	if client["type"] == "payment.get" {
		if err := paymentRefusal(client, d["preview"], previewDigest); err != nil {
			return err
		}
	}
	auth, err := b64url(d["authenticator_data"])
	if err != nil || len(auth) < 37 {
		return fmt.Errorf("authenticatorData is too short")
	}
	rpHash := sha256.Sum256([]byte(str(d["rp_id"])))
	if !bytes.Equal(auth[:32], rpHash[:]) {
		return fmt.Errorf("authenticatorData is for another RP ID")
	}
	if auth[32]&0x01 == 0 || auth[32]&0x04 == 0 {
		return fmt.Errorf("the authenticator did not record user presence and verification")
	}
	signature, err := b64url(d["signature"])
	if err != nil {
		return fmt.Errorf("the signature is not base64url")
	}
	clientHash := sha256.Sum256(rawClient)
	signed := append(append([]byte{}, auth...), clientHash[:]...)
	key, _ := d["public_key"].(map[string]interface{})
	return verifyWithJWK(key, signed, signature)
}

func verifyWithJWK(key map[string]interface{}, signed, signature []byte) error {
	digest := sha256.Sum256(signed)
	switch key["kty"] {
	case "EC":
		x, errX := b64url(key["x"])
		y, errY := b64url(key["y"])
		if key["crv"] != "P-256" || errX != nil || errY != nil {
			return fmt.Errorf("unsupported EC key")
		}
		pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
		if !ecdsa.VerifyASN1(pub, digest[:], signature) {
			return fmt.Errorf("the device signature does not verify")
		}
	case "OKP":
		x, err := b64url(key["x"])
		if key["crv"] != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			return fmt.Errorf("unsupported OKP key")
		}
		if !ed25519.Verify(ed25519.PublicKey(x), signed, signature) {
			return fmt.Errorf("the device signature does not verify")
		}
	case "RSA":
		n, errN := b64url(key["n"])
		e, errE := b64url(key["e"])
		if errN != nil || errE != nil {
			return fmt.Errorf("unsupported RSA key")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], signature) != nil {
			return fmt.Errorf("the device signature does not verify")
		}
	default:
		return fmt.Errorf("unsupported credential key type")
	}
	return nil
}
