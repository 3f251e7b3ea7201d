package com.signoff.client;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict RFC 8259 JSON reader and writer, so the client needs no JSON library.
 *
 * <p>Objects read as unmodifiable {@code LinkedHashMap<String, Object>} (duplicate names are
 * refused), arrays as unmodifiable lists, integers as {@link Long} (or {@link BigInteger} past
 * its range), other numbers as {@link BigDecimal} (never a lossy double), and
 * {@code true}/{@code false}/{@code null} as {@link Boolean} and {@code null}.
 */
final class Json {
    static final int MAX_DEPTH = 256;

    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    /** Parses one JSON value; anything but whitespace after it is an error. */
    static Object parse(String text) {
        if (text == null) {
            throw new MalformedJsonException("no JSON text", 0);
        }
        Json reader = new Json(text);
        reader.skipWhitespace();
        Object value = reader.value(0);
        reader.skipWhitespace();
        if (reader.at != text.length()) {
            throw reader.error("unexpected text after the JSON value");
        }
        return value;
    }

    /** Parses a JSON object, refusing any other kind of value. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> parseObject(String text) {
        Object value = parse(text);
        if (!(value instanceof Map)) {
            throw new MalformedJsonException("expected a JSON object", 0);
        }
        return (Map<String, Object>) value;
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nested deeper than " + MAX_DEPTH);
        }
        if (at >= text.length()) {
            throw error("unexpected end of JSON");
        }
        char c = text.charAt(at);
        switch (c) {
            case '{':
                return object(depth);
            case '[':
                return array(depth);
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected character '" + c + "'");
        }
    }

    private Map<String, Object> object(int depth) {
        Map<String, Object> members = new LinkedHashMap<String, Object>();
        at++;
        skipWhitespace();
        if (peek() == '}') {
            at++;
            return Collections.unmodifiableMap(members);
        }
        while (true) {
            skipWhitespace();
            if (peek() != '"') {
                throw error("expected a member name");
            }
            String name = string();
            skipWhitespace();
            expect(':');
            skipWhitespace();
            if (members.containsKey(name)) {
                throw error("duplicate member name \"" + name + "\"");
            }
            members.put(name, value(depth + 1));
            skipWhitespace();
            char next = peek();
            at++;
            if (next == '}') {
                return Collections.unmodifiableMap(members);
            }
            if (next != ',') {
                at--;
                throw error("expected ',' or '}'");
            }
        }
    }

    private List<Object> array(int depth) {
        List<Object> items = new ArrayList<Object>();
        at++;
        skipWhitespace();
        if (peek() == ']') {
            at++;
            return Collections.unmodifiableList(items);
        }
        while (true) {
            skipWhitespace();
            items.add(value(depth + 1));
            skipWhitespace();
            char next = peek();
            at++;
            if (next == ']') {
                return Collections.unmodifiableList(items);
            }
            if (next != ',') {
                at--;
                throw error("expected ',' or ']'");
            }
        }
    }

    private String string() {
        at++;
        StringBuilder out = new StringBuilder();
        while (true) {
            if (at >= text.length()) {
                throw error("unterminated string");
            }
            char c = text.charAt(at++);
            if (c == '"') {
                return out.toString();
            }
            if (c < 0x20) {
                at--;
                throw error("control character in a string");
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (at >= text.length()) {
                throw error("unterminated escape");
            }
            char escaped = text.charAt(at++);
            switch (escaped) {
                case '"': out.append('"'); break;
                case '\\': out.append('\\'); break;
                case '/': out.append('/'); break;
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'n': out.append('\n'); break;
                case 'r': out.append('\r'); break;
                case 't': out.append('\t'); break;
                case 'u': out.append(unicodeEscape()); break;
                default:
                    at--;
                    throw error("invalid escape '\\" + escaped + "'");
            }
        }
    }

    private char unicodeEscape() {
        if (at + 4 > text.length()) {
            throw error("short \\u escape");
        }
        int code = 0;
        for (int i = 0; i < 4; i++) {
            int digit = Character.digit(text.charAt(at + i), 16);
            if (digit < 0) {
                throw error("invalid \\u escape");
            }
            code = code * 16 + digit;
        }
        at += 4;
        return (char) code;
    }

    private Object number() {
        int start = at;
        if (peek() == '-') {
            at++;
        }
        if (peek() == '0') {
            at++;
        } else if (!digits()) {
            throw error("invalid number");
        }
        boolean integral = true;
        if (peek() == '.') {
            at++;
            integral = false;
            if (!digits()) {
                throw error("digits expected after '.'");
            }
        }
        if (peek() == 'e' || peek() == 'E') {
            at++;
            integral = false;
            if (peek() == '+' || peek() == '-') {
                at++;
            }
            if (!digits()) {
                throw error("digits expected in the exponent");
            }
        }
        String literal = text.substring(start, at);
        if (!integral) {
            return new BigDecimal(literal);
        }
        BigInteger big = new BigInteger(literal);
        return big.bitLength() < 64 ? (Object) Long.valueOf(big.longValue()) : big;
    }

    private boolean digits() {
        int start = at;
        while (at < text.length() && text.charAt(at) >= '0' && text.charAt(at) <= '9') {
            at++;
        }
        return at > start;
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, at)) {
            throw error("unexpected literal");
        }
        at += word.length();
        return value;
    }

    private void expect(char c) {
        if (peek() != c) {
            throw error("expected '" + c + "'");
        }
        at++;
    }

    private char peek() {
        return at < text.length() ? text.charAt(at) : '\0';
    }

    private void skipWhitespace() {
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            at++;
        }
    }

    private MalformedJsonException error(String message) {
        return new MalformedJsonException(message, at);
    }

    /** Writes a value built of maps with string keys, lists, strings, numbers, booleans, null. */
    static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out);
        return out.toString();
    }

    private static void write(Object value, StringBuilder out) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String) {
            writeString((String) value, out);
        } else if (value instanceof Boolean) {
            out.append(value.toString());
        } else if (value instanceof Long || value instanceof Integer || value instanceof Short
                || value instanceof Byte || value instanceof BigInteger
                || value instanceof BigDecimal) {
            out.append(value.toString());
        } else if (value instanceof Map) {
            writeObject((Map<?, ?>) value, out);
        } else if (value instanceof List) {
            out.append('[');
            String separator = "";
            for (Object item : (List<?>) value) {
                out.append(separator);
                write(item, out);
                separator = ",";
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException(
                    "not writable as JSON: " + value.getClass().getName());
        }
    }

    private static void writeObject(Map<?, ?> members, StringBuilder out) {
        out.append('{');
        String separator = "";
        for (Map.Entry<?, ?> member : members.entrySet()) {
            if (!(member.getKey() instanceof String)) {
                throw new IllegalArgumentException("JSON member names are strings");
            }
            out.append(separator);
            writeString((String) member.getKey(), out);
            out.append(':');
            write(member.getValue(), out);
            separator = ",";
        }
        out.append('}');
    }

    private static void writeString(String value, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }

    /** Thrown for text that is not JSON; the position is a character offset. */
    static final class MalformedJsonException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        MalformedJsonException(String message, int position) {
            super(message + " at character " + position);
        }
    }
}
