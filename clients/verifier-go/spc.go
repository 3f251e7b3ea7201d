package main

// Secure Payment Confirmation (PROOF-FORMAT §9): a payment.get assertion verifies only when
// the browser showed the recorded preview's payee and amount.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"
)

var payeeFields = map[string]bool{"payee": true, "payee_name": true, "recipient": true, "beneficiary": true}

func exponent(currency string) int {
	switch currency {
	case "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF":
		return 0
	case "BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND":
		return 3
	case "CLF", "UYW":
		return 4
	}
	return 2
}

func majorUnits(minor int64, currency string) string {
	digits := exponent(currency)
	text := fmt.Sprint(minor)
	if digits == 0 {
		return text
	}
	for len(text) < digits+1 {
		text = "0" + text
	}
	return text[:len(text)-digits] + "." + text[len(text)-digits:]
}

func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r > 0x7e:
			for _, unit := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, unit)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// pyJSON writes a value as Python's json.dumps(value, sort_keys=True) does.
func pyJSON(v interface{}) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprint(x)
	case json.Number:
		return x.String()
	case string:
		return pyString(x)
	case []interface{}:
		parts := make([]string, len(x))
		for i, item := range x {
			parts[i] = pyJSON(item)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]interface{}:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = pyString(k) + ": " + pyJSON(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

func paymentRefusal(client map[string]interface{}, preview interface{}, previewDigest interface{}) error {
	p, _ := preview.(map[string]interface{})
	recorded, _ := previewDigest.(string)
	if p == nil || recorded == "" {
		return fmt.Errorf("a payment confirmation without the proposal's preview")
	}
	sum := sha256.Sum256([]byte(pyJSON(p)))
	if hex.EncodeToString(sum[:]) != recorded {
		return fmt.Errorf("the payment confirmation's preview is not the proposal's")
	}
	fields, _ := p["fields"].([]interface{})
	var amount, payee map[string]interface{}
	for _, f := range fields {
		field, _ := f.(map[string]interface{})
		if field == nil {
			continue
		}
		if _, isText := field["currency"].(string); isText && amount == nil {
			if n, ok := field["machine_value"].(json.Number); ok {
				if v, err := n.Int64(); err == nil && v >= 0 && !strings.ContainsAny(n.String(), ".eE") {
					amount = field
				}
			}
		}
		if name, _ := field["name"].(string); payeeFields[name] && payee == nil {
			payee = field
		}
	}
	if amount == nil {
		return fmt.Errorf("a payment confirmation for a proposal that moves no money")
	}
	payeeName := str(p["title"])
	if payee != nil {
		payeeName = str(payee["display_value"])
	}
	currency := strings.ToUpper(amount["currency"].(string))
	minor, _ := amount["machine_value"].(json.Number).Int64()
	shown, _ := client["payment"].(map[string]interface{})
	if shown == nil {
		return fmt.Errorf("the payment confirmation's client data has no payment member")
	}
	if shown["payeeName"] != payeeName {
		return fmt.Errorf("the browser showed payee %v, the proposal displays %q", shown["payeeName"], payeeName)
	}
	total, _ := shown["total"].(map[string]interface{})
	if total == nil || total["currency"] != currency || total["value"] != majorUnits(minor, currency) {
		return fmt.Errorf("the browser showed the amount %v, the proposal displays %s %s", shown["total"], currency, majorUnits(minor, currency))
	}
	return nil
}
