package com.signoff.client;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * The decision's Idempotency-Key: {@code "confirm:v1:"} + lowercase hex SHA-256 of
 * <pre>
 *   u32be(len(utf8(proposalId))) || utf8(proposalId) || u32be(len(utf8(version))) || utf8(version)
 * </pre>
 * where {@code version} is written in decimal and {@code u32be} is a 4-byte big-endian byte
 * count. The length prefixes keep fields apart whatever they contain ({@code :} included), the
 * key names neither the person nor the ids in gateway logs, and the same decision on the same
 * version always gets the same key, so a retry, even after a restart, can never decide twice.
 */
public final class IdempotencyKeys {
    public static final String CONFIRMATION_PREFIX = "confirm:v1:";
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private IdempotencyKeys() {
    }

    public static String confirmation(String proposalId, long version) {
        if (proposalId == null || proposalId.isEmpty() || version < 1) {
            throw new IllegalArgumentException("a proposal id and a version >= 1 are required");
        }
        MessageDigest sha256 = sha256();
        lengthPrefixed(sha256, proposalId.getBytes(StandardCharsets.UTF_8));
        lengthPrefixed(sha256, Long.toString(version).getBytes(StandardCharsets.UTF_8));
        return CONFIRMATION_PREFIX + hex(sha256.digest());
    }

    private static void lengthPrefixed(MessageDigest digest, byte[] field) {
        digest.update(ByteBuffer.allocate(4).putInt(field.length).array());
        digest.update(field);
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException impossible) {
            throw new IllegalStateException("every Java platform provides SHA-256", impossible);
        }
    }

    static String hex(byte[] bytes) {
        char[] out = new char[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            out[2 * i] = HEX[(bytes[i] >> 4) & 0xf];
            out[2 * i + 1] = HEX[bytes[i] & 0xf];
        }
        return new String(out);
    }
}
