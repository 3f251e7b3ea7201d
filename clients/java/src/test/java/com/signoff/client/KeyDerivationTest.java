package com.signoff.client;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.List;

/** The Idempotency-Key vectors shared with tests/http/test_client_confirmation_keys.py. */
public final class KeyDerivationTest {
    private static List<Fields> vectors() throws IOException {
        byte[] file = Files.readAllBytes(Paths.get(Live.property("signoff.vectors")));
        return Fields.of(Json.parse(new String(file, StandardCharsets.UTF_8)), "vectors")
                .objects("vectors");
    }

    public void testEveryVectorMatchesTheDocumentedLayout() throws Exception {
        List<Fields> vectors = vectors();
        Check.isTrue(vectors.size() >= 8, "the shared file holds the vectors");
        for (Fields vector : vectors) {
            String proposalId = vector.string("proposal_id");
            long version = vector.integer("version");
            byte[] message = message(proposalId, version);
            Check.equal(vector.string("message_hex"), IdempotencyKeys.hex(message));
            String hashed = IdempotencyKeys.CONFIRMATION_PREFIX + IdempotencyKeys.hex(
                    MessageDigest.getInstance("SHA-256").digest(message));
            Check.equal(vector.string("key"), hashed);
            Check.equal(vector.string("key"), IdempotencyKeys.confirmation(proposalId, version));
            Check.equal(vector.string("key"),
                    SignoffClient.confirmationIdempotencyKey(proposalId, version));
        }
    }

    public void testConcatenationsThatLookAlikeGetDifferentKeys() {
        Check.notEqual(IdempotencyKeys.confirmation("p1", 23), IdempotencyKeys.confirmation("p12", 3));
        Check.notEqual(IdempotencyKeys.confirmation("a:b", 1), IdempotencyKeys.confirmation("a", 1));
        Check.equal(75, IdempotencyKeys.confirmation("prop_1", 1).length());
    }

    public void testVersionsBeyondAnIntAreKept() {
        Check.notEqual(IdempotencyKeys.confirmation("prop_max", 2147483648L),
                IdempotencyKeys.confirmation("prop_max", 0x7fffffffL));
    }

    public void testNoKeyWithoutAnIdAndAVersion() {
        Check.raises(IllegalArgumentException.class, new Check.Action() {
            @Override
            public void run() {
                IdempotencyKeys.confirmation("prop_1", 0);
            }
        });
        Check.raises(IllegalArgumentException.class, new Check.Action() {
            @Override
            public void run() {
                IdempotencyKeys.confirmation("", 1);
            }
        });
    }

    /** The documented bytes, written out independently of IdempotencyKeys. */
    private static byte[] message(String proposalId, long version) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        for (String field : new String[] {proposalId, String.valueOf(version)}) {
            byte[] utf8 = field.getBytes(StandardCharsets.UTF_8);
            out.writeInt(utf8.length);
            out.write(utf8);
        }
        out.flush();
        return bytes.toByteArray();
    }
}
