package com.signoff.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * A loopback HTTP proxy in front of the real server that injects one fault per connection,
 * in order: pass the exchange through, let the server answer but hold the answer back (the
 * client times out after the server decided), or answer 503 with Retry-After without asking
 * the server, or answer 409 {@code idempotency_key_in_flight} as the server does while the first
 * request with that key is still running. Upstream exchanges run one at a time in arrival order, so a retry reaches the
 * server only after the attempt it repeats was answered there.
 */
final class FaultProxy implements AutoCloseable {
    enum Fault { FORWARD, HOLD_ANSWER, ANSWER_503, ANSWER_KEY_IN_FLIGHT }

    /** What the proxy saw of one request. */
    static final class Seen {
        final String method;
        final String path;
        final String idempotencyKey;

        Seen(String method, String path, String idempotencyKey) {
            this.method = method;
            this.path = path;
            this.idempotencyKey = idempotencyKey;
        }

        @Override
        public String toString() {
            return method + " " + path + " [" + idempotencyKey + "]";
        }
    }

    private final String upstreamHost;
    private final int upstreamPort;
    private final int retryAfterSeconds;
    private final LinkedList<Fault> faults;
    private final ServerSocket listener;
    private final List<Seen> seen = Collections.synchronizedList(new ArrayList<Seen>());
    private final List<Socket> open = Collections.synchronizedList(new ArrayList<Socket>());
    private final Object turn = new Object();
    private final Set<Integer> finished = new HashSet<Integer>();
    private int nextToArrive;
    private int nextUpstream;

    FaultProxy(String upstreamUrl, int retryAfterSeconds, Fault... faults) throws IOException {
        String hostPort = upstreamUrl.replaceFirst("^http://", "").replaceFirst("/.*$", "");
        this.upstreamHost = hostPort.substring(0, hostPort.lastIndexOf(':'));
        this.upstreamPort = Integer.parseInt(hostPort.substring(hostPort.lastIndexOf(':') + 1));
        this.retryAfterSeconds = retryAfterSeconds;
        this.faults = new LinkedList<Fault>(Arrays.asList(faults));
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(new Runnable() {
            @Override
            public void run() {
                accept();
            }
        }, "fault-proxy");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    String url() {
        return "http://127.0.0.1:" + listener.getLocalPort();
    }

    List<Seen> requests() {
        synchronized (seen) {
            return new ArrayList<Seen>(seen);
        }
    }

    private void accept() {
        while (!listener.isClosed()) {
            final Socket client;
            try {
                client = listener.accept();
            } catch (IOException closed) {
                return;
            }
            open.add(client);
            final int order;
            final Fault fault;
            synchronized (turn) {
                order = nextToArrive++;
                fault = faults.isEmpty() ? Fault.FORWARD : faults.removeFirst();
            }
            Thread handler = new Thread(new Runnable() {
                @Override
                public void run() {
                    handle(client, order, fault);
                }
            }, "fault-proxy-" + order);
            handler.setDaemon(true);
            handler.start();
        }
    }

    private void handle(Socket client, int order, Fault fault) {
        try {
            InputStream in = client.getInputStream();
            String head = readHead(in);
            byte[] body = readBody(in, head);
            String[] requestLine = head.split("\r\n", 2)[0].split(" ");
            seen.add(new Seen(requestLine[0], requestLine[1], header(head, "idempotency-key")));
            if (fault == Fault.ANSWER_503 || fault == Fault.ANSWER_KEY_IN_FLIGHT) {
                finishTurn(order);
                write(client, fault == Fault.ANSWER_503
                        ? canned(503, "Service Unavailable", "unavailable")
                        : canned(409, "Conflict", "idempotency_key_in_flight"));
                return;
            }
            byte[] answer = upstream(order, head, body);
            if (fault == Fault.FORWARD) {
                write(client, answer);
            } else {
                while (in.read() != -1) {
                    // hold the answer until the client gives up and closes
                }
            }
        } catch (IOException | InterruptedException ignored) {
            // the client went away, or the proxy is closing
        } finally {
            finishTurn(order);
            closeQuietly(client);
        }
    }

    /** Sends the request with Connection: close and reads the whole answer, in arrival order. */
    private byte[] upstream(int order, String head, byte[] body)
            throws IOException, InterruptedException {
        synchronized (turn) {
            while (nextUpstream != order) {
                turn.wait();
            }
        }
        try {
            Socket server = new Socket(upstreamHost, upstreamPort);
            try {
                OutputStream out = server.getOutputStream();
                out.write(withConnectionClose(head).getBytes(StandardCharsets.ISO_8859_1));
                out.write(body);
                out.flush();
                return readToEnd(server.getInputStream());
            } finally {
                server.close();
            }
        } finally {
            finishTurn(order);
        }
    }

    /** This connection is done with the server (or never needed it); let the next one go. */
    private void finishTurn(int order) {
        synchronized (turn) {
            finished.add(order);
            while (finished.contains(nextUpstream)) {
                nextUpstream++;
            }
            turn.notifyAll();
        }
    }

    private byte[] canned(int status, String reason, String code) {
        String problem = "{\"type\":\"urn:signoff:problem:" + code + "\",\"title\":\"" + reason
                + "\",\"status\":" + status + ",\"detail\":\"injected by the test proxy\","
                + "\"code\":\"" + code + "\"}";
        byte[] bytes = problem.getBytes(StandardCharsets.UTF_8);
        String head = "HTTP/1.1 " + status + " " + reason + "\r\n"
                + "Content-Type: application/problem+json\r\n"
                + (status == 503 ? "Retry-After: " + retryAfterSeconds + "\r\n" : "")
                + "Content-Length: " + bytes.length + "\r\n"
                + "Connection: close\r\n\r\n";
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] headBytes = head.getBytes(StandardCharsets.ISO_8859_1);
        out.write(headBytes, 0, headBytes.length);
        out.write(bytes, 0, bytes.length);
        return out.toByteArray();
    }

    private static String withConnectionClose(String head) {
        StringBuilder out = new StringBuilder();
        for (String line : head.split("\r\n")) {
            if (!line.toLowerCase(Locale.ROOT).startsWith("connection:")) {
                out.append(line).append("\r\n");
            }
        }
        return out.append("Connection: close\r\n\r\n").toString();
    }

    private static String header(String head, String name) {
        for (String line : head.split("\r\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase(name)) {
                return line.substring(colon + 1).trim();
            }
        }
        return null;
    }

    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int matched = 0;
        while (matched < 4) {
            int b = in.read();
            if (b == -1) {
                throw new IOException("connection closed before the request head ended");
            }
            head.write(b);
            matched = (b == "\r\n\r\n".charAt(matched)) ? matched + 1 : (b == '\r' ? 1 : 0);
        }
        String text = new String(head.toByteArray(), StandardCharsets.ISO_8859_1);
        return text.substring(0, text.length() - 4);
    }

    private static byte[] readBody(InputStream in, String head) throws IOException {
        String length = header(head, "content-length");
        byte[] body = new byte[length == null ? 0 : Integer.parseInt(length)];
        int read = 0;
        while (read < body.length) {
            int n = in.read(body, read, body.length - read);
            if (n == -1) {
                throw new IOException("connection closed inside the request body");
            }
            read += n;
        }
        return body;
    }

    private static byte[] readToEnd(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buffer = new byte[8192];
        int n;
        while ((n = in.read(buffer)) != -1) {
            out.write(buffer, 0, n);
        }
        return out.toByteArray();
    }

    private static void write(Socket client, byte[] bytes) throws IOException {
        OutputStream out = client.getOutputStream();
        out.write(bytes);
        out.flush();
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // already closed
        }
    }

    @Override
    public void close() throws IOException {
        listener.close();
        synchronized (open) {
            for (Socket socket : open) {
                closeQuietly(socket);
            }
        }
    }
}
