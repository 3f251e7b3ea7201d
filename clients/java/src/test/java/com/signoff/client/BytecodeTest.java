package com.signoff.client;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Enumeration;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/** Every class in the shipped jar is Java 8 bytecode: class-file major version 52. */
public final class BytecodeTest {
    static final int JAVA_8 = 52;

    public void testEveryClassInTheJarIsJava8() throws IOException {
        int classes = 0;
        try (JarFile jar = new JarFile(Live.property("signoff.jar"))) {
            Enumeration<JarEntry> entries = jar.entries();
            while (entries.hasMoreElements()) {
                JarEntry entry = entries.nextElement();
                if (!entry.getName().endsWith(".class")) {
                    continue;
                }
                try (InputStream in = jar.getInputStream(entry)) {
                    Check.equal(entry.getName() + " major " + JAVA_8,
                            entry.getName() + " major " + majorVersion(in));
                }
                classes++;
            }
        }
        Check.isTrue(classes >= 20, "the jar holds the client's classes, found " + classes);
    }

    /** Reads the class-file header: magic 0xCAFEBABE, minor, major. */
    static int majorVersion(InputStream in) throws IOException {
        DataInputStream data = new DataInputStream(in);
        if (data.readInt() != 0xCAFEBABE) {
            throw new IOException("not a class file");
        }
        data.readUnsignedShort();
        return data.readUnsignedShort();
    }
}
