package com.signoff.client;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The hand-written JSON reader and writer. */
public final class JsonTest {
    public void testReadsEveryKindOfValue() {
        Map<String, Object> doc = Json.parseObject(
                " {\"s\":\"\\u00a5199.00 \\\"q\\\" \\ud83d\\ude00\",\"i\":19900,\"neg\":-3,"
                + "\"big\":12345678901234567890,\"d\":1.50,\"e\":2E3,\"t\":true,\"f\":false,"
                + "\"n\":null,\"a\":[1,[],{}],\"o\":{\"k\":\"v\"}} ");
        Check.equal("¥199.00 \"q\" \ud83d\ude00", doc.get("s"));
        Check.equal(19900L, doc.get("i"));
        Check.equal(-3L, doc.get("neg"));
        Check.equal(new BigInteger("12345678901234567890"), doc.get("big"));
        Check.equal(new BigDecimal("1.50"), doc.get("d"));
        Check.equal(new BigDecimal("2E3"), doc.get("e"));
        Check.equal(Boolean.TRUE, doc.get("t"));
        Check.equal(Boolean.FALSE, doc.get("f"));
        Check.isTrue(doc.containsKey("n") && doc.get("n") == null, "null is kept");
        Check.equal(3, ((List<?>) doc.get("a")).size());
        Check.equal("v", ((Map<?, ?>) doc.get("o")).get("k"));
    }

    public void testRefusesWhatIsNotJson() {
        List<String> bad = Arrays.asList("", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "+1",
                "NaN", "Infinity", "'x'", "\"\u0001\"", "\"\\x\"", "\"\\u12\"", "{} x",
                "{\"a\":1,\"a\":2}", "{a:1}", "tru", "[1 2]", "\"open");
        for (final String text : bad) {
            Check.raises(Json.MalformedJsonException.class, new Check.Action() {
                @Override
                public void run() {
                    Json.parse(text);
                }
            });
        }
    }

    public void testRefusesNestingDeeperThanTheLimit() {
        StringBuilder deep = new StringBuilder();
        for (int i = 0; i < Json.MAX_DEPTH + 2; i++) {
            deep.append('[');
        }
        final String text = deep.toString();
        Check.raises(Json.MalformedJsonException.class, new Check.Action() {
            @Override
            public void run() {
                Json.parse(text);
            }
        });
    }

    public void testWritesWhatItReadsBack() {
        Map<String, Object> body = new LinkedHashMap<String, Object>();
        body.put("text", "quote \" backslash \\ newline \n control \u0001 ¥ 提案");
        body.put("version", 2147483648L);
        body.put("none", null);
        body.put("list", Arrays.<Object>asList("a", 1L, Boolean.TRUE));
        String written = Json.write(body);
        Check.isTrue(!written.contains("\n"), "control characters are escaped");
        Check.equal(body, Json.parse(written));
    }

    public void testDoesNotWriteFloatingPointNumbers() {
        Check.raises(IllegalArgumentException.class, new Check.Action() {
            @Override
            public void run() {
                Json.write(Arrays.<Object>asList(1.5d));
            }
        });
    }
}
