// Command verifier-go checks a signoff audit bundle offline, written from docs/PROOF-FORMAT.md
// alone: JCS and SHA-256 for the events, golang.org/x/mod/sumdb/tlog for the RFC 9162 tree
// and its proofs, golang.org/x/mod/sumdb/note for the C2SP checkpoint notes.
//
//	verifier-go --trust trust.json --bundle bundle.json [--allow-uncovered]
//
// Exit 0 and "verified" when every check passes; exit 1 and one "BROKEN [code] …" line per
// failed check otherwise; exit 2 when the input cannot be read.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const clockSkew = 300

type event struct {
	Tenant      string  `json:"tenant"`
	Seq         int64   `json:"seq"`
	At          int64   `json:"at"`
	Kind        string  `json:"kind"`
	ProposalID  *string `json:"proposal_id"`
	ExecutionID *string `json:"execution_id"`
	Actor       *string `json:"actor"`
	Data        string  `json:"data"`
	PrevHash    string  `json:"prev_hash"`
	Hash        string  `json:"hash"`
	Mac         *string `json:"mac"`
}

type bundle struct {
	Format string `json:"format"`
	Tenant string `json:"tenant"`
	Origin string `json:"origin"`
	Start  struct {
		Size     int64    `json:"size"`
		Frontier []string `json:"frontier"`
		Anchor   *struct {
			Hash  string   `json:"hash"`
			Proof []string `json:"proof"`
		} `json:"anchor"`
	} `json:"start"`
	Events      []event  `json:"events"`
	Checkpoints []string `json:"checkpoints"`
	Consistency []struct {
		OldSize int64    `json:"old_size"`
		NewSize int64    `json:"new_size"`
		Proof   []string `json:"proof"`
	} `json:"consistency"`
}

type checkpoint struct {
	size      int64
	root      tlog.Hash
	time      *int64
	cosigners map[string]int64
}

type report struct {
	findings []string
	notes    []string
}

func (r *report) fail(code, format string, args ...interface{}) {
	r.findings = append(r.findings, fmt.Sprintf("[%s] %s", code, fmt.Sprintf(format, args...)))
}

func main() {
	trustPath := flag.String("trust", "", "the trust file (or a JWKS): obtained from the deployment")
	bundlePath := flag.String("bundle", "", "the exported audit bundle")
	allowUncovered := flag.Bool("allow-uncovered", false, "report events no checkpoint covers")
	flag.Parse()
	if *trustPath == "" || *bundlePath == "" {
		fmt.Fprintln(os.Stderr, "error [no_trust_root]: pass --trust FILE and --bundle FILE")
		os.Exit(2)
	}
	trust, err := loadTrust(*trustPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "error [proof_format]: %v\n", err)
		os.Exit(2)
	}
	raw, err := os.ReadFile(*bundlePath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "error [proof_format]: %v\n", err)
		os.Exit(2)
	}
	var b bundle
	if err := json.Unmarshal(raw, &b); err != nil || b.Format != "signoff-audit-bundle/1" {
		fmt.Fprintf(os.Stderr, "error [proof_format]: %s is not a signoff-audit-bundle/1\n", *bundlePath)
		os.Exit(2)
	}
	r := &report{}
	covered, uncovered := verifyBundle(&b, trust, *allowUncovered, r)
	fmt.Printf("bundle %s: %d events, %d covered, %d not covered by a checkpoint\n",
		*bundlePath, len(b.Events), covered, uncovered)
	for _, p := range proven(b.Events) {
		fmt.Println("  " + p)
	}
	for _, n := range r.notes {
		fmt.Println("  note: " + n)
	}
	for _, f := range r.findings {
		fmt.Println("BROKEN " + f)
	}
	if len(r.findings) > 0 {
		fmt.Printf("NOT verified: %d findings\n", len(r.findings))
		os.Exit(1)
	}
	fmt.Println("verified")
}

func verifyBundle(b *bundle, trust *trustRoot, allowUncovered bool, r *report) (int64, int64) {
	if len(trust.origins) > 0 && !trust.origins[b.Origin] {
		r.fail("origin_untrusted", "log %q is not one the trust root lists", b.Origin)
	}
	checkpoints := map[int64]*checkpoint{}
	for i, text := range b.Checkpoints {
		c, err := openCheckpoint(text, b.Origin, trust)
		if err != nil {
			r.fail("checkpoint_signature", "checkpoint %d: %v", i+1, err)
			continue
		}
		if old, ok := checkpoints[c.size]; ok && old.root != c.root {
			r.fail("checkpoint_inconsistent", "two roots signed for size %d", c.size)
		}
		checkpoints[c.size] = c
	}
	for _, link := range b.Consistency {
		old, okOld := checkpoints[link.OldSize]
		neu, okNew := checkpoints[link.NewSize]
		proof, err := hashes(link.Proof)
		if !okOld || !okNew || err != nil ||
			tlog.CheckTree(tlog.TreeProof(proof), link.NewSize, neu.root, link.OldSize, old.root) != nil {
			r.fail("checkpoint_inconsistent", "checkpoint %d does not extend checkpoint %d",
				link.NewSize, link.OldSize)
		}
	}
	tree, prev := startTree(b, checkpoints, r)
	end := walk(b, tree, prev, checkpoints, r)
	var last int64
	for size := range checkpoints {
		if size > last {
			last = size
		}
	}
	if last > end {
		r.fail("events_missing", "checkpoint %d covers %d events; the bundle ends at #%d", last, last, end)
	}
	covered := max64(0, min64(last, end)-b.Start.Size)
	uncovered := max64(0, end-max64(last, b.Start.Size))
	if len(checkpoints) == 0 {
		r.fail("no_checkpoint", "no checkpoint signed by a trusted key: nothing is vouched for")
		return covered, uncovered
	}
	newest := checkpoints[last]
	if len(newest.cosigners) < trust.quorum {
		r.fail("cosignatures_missing", "checkpoint %d has %d of the %d witness cosignatures required",
			last, len(newest.cosigners), trust.quorum)
	}
	if uncovered > 0 {
		msg := fmt.Sprintf("%d events after checkpoint %d are not covered by any signed checkpoint", uncovered, last)
		if allowUncovered {
			r.notes = append(r.notes, msg+" (allowed)")
		} else {
			r.fail("events_uncovered", "%s", msg)
		}
	}
	checkProposals(b.Events, trust, r)
	return covered, uncovered
}

func openCheckpoint(text, origin string, trust *trustRoot) (*checkpoint, error) {
	var verifiers verifierList
	owners := map[string]jwk{}
	logLines := map[string]*cosigner{}
	for _, k := range trust.keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		pub, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			continue
		}
		v, err := logVerifier(origin, pub)
		if err != nil {
			return nil, err
		}
		verifiers = append(verifiers, v)
		owners[fmt.Sprintf("%08x", v.KeyHash())] = k
		own := &cosigner{name: origin, key: pub}
		logLines[k.Kid] = own
		verifiers = append(verifiers, own)
	}
	witnesses := make([]*cosigner, len(trust.witnesses))
	for i := range trust.witnesses {
		w := trust.witnesses[i]
		witnesses[i] = &w
		verifiers = append(verifiers, witnesses[i])
	}
	n, err := note.Open([]byte(text), verifiers)
	if err != nil {
		return nil, err
	}
	var signer *jwk
	for _, sig := range n.Sigs {
		if k, ok := owners[fmt.Sprintf("%08x", sig.Hash)]; ok && sig.Name == origin {
			signer = &k
			break
		}
	}
	if signer == nil {
		return nil, fmt.Errorf("no Ed25519 signature from a trusted key under %q", origin)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[3] != "" || lines[0] != origin {
		return nil, fmt.Errorf("not a checkpoint of %q without extension lines", origin)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return nil, fmt.Errorf("tree size %q is not a plain decimal", lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		return nil, fmt.Errorf("root hash is not 32 bytes of base64")
	}
	c := &checkpoint{size: size, time: logLines[signer.Kid].seen, cosigners: map[string]int64{}}
	copy(c.root[:], root)
	if refusal := signer.windowRefusal("checkpoint", c.time); refusal != "" {
		return nil, fmt.Errorf("%s", refusal)
	}
	for _, w := range witnesses {
		if w.seen != nil {
			c.cosigners[w.name] = *w.seen
		}
	}
	return c, nil
}

// The tree as its perfect subtrees (RFC 9162 §2.1.1 folded left to right): appending a leaf
// merges equal-sized subtrees; the root folds them right to left. Hashes are sumdb/tlog's.
type tree struct {
	sizes  []int64
	hashes []tlog.Hash
	size   int64
}

func newTree(frontier []tlog.Hash, size int64) (*tree, error) {
	t := &tree{size: size}
	for bit := 62; bit >= 0; bit-- {
		if size>>uint(bit)&1 == 1 {
			t.sizes = append(t.sizes, int64(1)<<uint(bit))
		}
	}
	if len(t.sizes) != len(frontier) {
		return nil, fmt.Errorf("the frontier does not fit size %d", size)
	}
	t.hashes = append(t.hashes, frontier...)
	return t, nil
}

func (t *tree) appendLeaf(h tlog.Hash) {
	t.sizes, t.hashes = append(t.sizes, 1), append(t.hashes, h)
	t.size++
	for n := len(t.sizes); n > 1 && t.sizes[n-1] == t.sizes[n-2]; n = len(t.sizes) {
		merged := tlog.NodeHash(t.hashes[n-2], t.hashes[n-1])
		t.sizes = append(t.sizes[:n-2], t.sizes[n-2]*2)
		t.hashes = append(t.hashes[:n-2], merged)
	}
}

func (t *tree) root() tlog.Hash {
	if len(t.hashes) == 0 {
		return tlog.Hash(sha256.Sum256(nil))
	}
	r := t.hashes[len(t.hashes)-1]
	for i := len(t.hashes) - 2; i >= 0; i-- {
		r = tlog.NodeHash(t.hashes[i], r)
	}
	return r
}

func startTree(b *bundle, checkpoints map[int64]*checkpoint, r *report) (*tree, string) {
	m := b.Start.Size
	if m == 0 {
		t, _ := newTree(nil, 0)
		return t, strings.Repeat("0", 64)
	}
	frontier, err := hashes(b.Start.Frontier)
	var t *tree
	if err == nil {
		t, err = newTree(frontier, m)
	}
	if err != nil {
		r.fail("start_mismatch", "the frontier does not fit size %d", m)
		t, _ = newTree(nil, 0)
		return t, ""
	}
	anchor := checkpoints[m]
	if anchor == nil || t.root() != anchor.root || b.Start.Anchor == nil {
		r.fail("start_mismatch", "the range does not start at a signed checkpoint (%d)", m)
		return t, ""
	}
	leaf, err := leafOf(b.Start.Anchor.Hash)
	proof, perr := hashes(b.Start.Anchor.Proof)
	if err != nil || perr != nil ||
		tlog.CheckRecord(tlog.RecordProof(proof), m, anchor.root, m-1, leaf) != nil {
		r.fail("start_mismatch", "event #%d is not proven in checkpoint %d", m, m)
	}
	return t, b.Start.Anchor.Hash
}

func walk(b *bundle, t *tree, prev string, checkpoints map[int64]*checkpoint, r *report) int64 {
	seq := b.Start.Size
	macs := map[string]int64{}
	var latest int64
	for _, e := range b.Events {
		where := fmt.Sprintf("event #%d (%s)", e.Seq, e.Kind)
		if e.Tenant != b.Tenant {
			r.fail("wrong_tenant", "%s belongs to tenant %q", where, e.Tenant)
		}
		if e.Seq != seq+1 || e.PrevHash != prev {
			r.fail("chain_broken", "%s: gap or broken link before it", where)
		}
		if h, err := eventHash(e); err != nil || h != e.Hash {
			r.fail("event_edited", "%s: content does not match its hash", where)
		}
		if e.Mac != nil {
			if first, ok := macs[*e.Mac]; ok {
				r.fail("event_replayed", "%s repeats event #%d", where, first)
			} else {
				macs[*e.Mac] = e.Seq
			}
		}
		if e.At > latest {
			latest = e.At
		}
		seq, prev = seq+1, e.Hash
		leaf, err := leafOf(e.Hash)
		if err != nil {
			r.fail("event_edited", "%s: hash is not hex", where)
			continue
		}
		t.appendLeaf(leaf)
		c := checkpoints[seq]
		if c != nil && t.root() != c.root {
			r.fail("checkpoint_mismatch", "checkpoint %d signed other events than these (history rewritten)", seq)
		}
		if c != nil && c.time != nil && latest/1000000 > *c.time+clockSkew {
			r.fail("checkpoint_time", "checkpoint %d says it was signed at %d, before the events it covers", seq, *c.time)
		}
	}
	return seq
}

func eventHash(e event) (string, error) {
	d := map[string]interface{}{
		"tenant": e.Tenant, "seq": e.Seq, "at": e.At, "kind": e.Kind,
		"proposal_id": nullable(e.ProposalID), "execution_id": nullable(e.ExecutionID),
		"actor": nullable(e.Actor), "data": e.Data, "prev_hash": e.PrevHash,
	}
	if e.Mac != nil {
		d["mac"] = *e.Mac
	}
	text, err := jcs(d)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(text)
	return hex.EncodeToString(sum[:]), nil
}

func nullable(s *string) interface{} {
	if s == nil {
		return nil
	}
	return *s
}

func leafOf(hexHash string) (tlog.Hash, error) {
	raw, err := hex.DecodeString(hexHash)
	if err != nil || len(raw) != 32 {
		return tlog.Hash{}, fmt.Errorf("not a 32-byte hex hash")
	}
	return tlog.RecordHash(raw), nil
}

func hashes(texts []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(texts))
	for i, text := range texts {
		raw, err := base64.StdEncoding.DecodeString(text)
		if err != nil || len(raw) != tlog.HashSize {
			return nil, fmt.Errorf("proof hash %d is not 32 bytes of base64", i)
		}
		copy(out[i][:], raw)
	}
	return out, nil
}

func payload(e event) map[string]interface{} {
	var out map[string]interface{}
	d := json.NewDecoder(bytes.NewReader([]byte(e.Data)))
	d.UseNumber()
	if d.Decode(&out) != nil || out == nil {
		return map[string]interface{}{}
	}
	return out
}

func str(v interface{}) string {
	s, _ := v.(string)
	return s
}

func proven(events []event) []string {
	type summary struct {
		created *event
		outcome *event
		lines   []string
	}
	byProposal := map[string]*summary{}
	var order []string
	for i := range events {
		e := &events[i]
		if e.ProposalID == nil {
			continue
		}
		s, ok := byProposal[*e.ProposalID]
		if !ok {
			s = &summary{}
			byProposal[*e.ProposalID] = s
			order = append(order, *e.ProposalID)
		}
		switch e.Kind {
		case "proposal.created":
			s.created = e
		case "decision.approved":
			s.lines = append(s.lines, fmt.Sprintf("    approved by %s as %s at %d", str(nullable(e.Actor)),
				str(payload(*e)["step"]), e.At/1000000))
		case "execution.succeeded", "execution.failed_terminal", "execution.resolved":
			s.outcome = e
		}
	}
	var out []string
	sort.Strings(order)
	for _, pid := range order {
		s := byProposal[pid]
		if s.created == nil || s.outcome == nil {
			continue
		}
		p, o := payload(*s.created), payload(*s.outcome)
		outcome := str(o["status"])
		if outcome == "" {
			outcome = strings.TrimPrefix(s.outcome.Kind, "execution.")
		}
		out = append(out, fmt.Sprintf("proves proposal %s: %s v%s, args digest %s, resource %s",
			pid, str(p["tool"]), str(p["tool_version"]), str(p["args_digest"]), str(p["resource_id"])))
		out = append(out, s.lines...)
		out = append(out, fmt.Sprintf("    outcome %s, provider reference %s", outcome, str(o["provider_reference"])))
	}
	return out
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}
