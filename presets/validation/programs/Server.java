import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.security.MessageDigest;
import java.util.concurrent.Executors;

// A small multi-threaded JVM service for advise's validation: each request
// hashes a 64 KB buffer 16 times (about a millisecond of CPU) on a pool of 8
// threads, with the JIT's and the garbage collector's threads beside them.
public class Server {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        byte[] buf = new byte[64 * 1024];
        for (int i = 0; i < buf.length; i++) buf[i] = (byte) (i * 31);
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 128);
        s.createContext("/", ex -> {
            byte[] out;
            try {
                MessageDigest md = MessageDigest.getInstance("SHA-256");
                byte[] d = buf;
                for (int i = 0; i < 16; i++) { md.update(d); d = java.util.Arrays.copyOf(md.digest(), 64 * 1024); }
                out = java.util.HexFormat.of().formatHex(md.digest(d)).getBytes();
            } catch (Exception e) { out = e.toString().getBytes(); }
            ex.sendResponseHeaders(200, out.length);
            try (OutputStream os = ex.getResponseBody()) { os.write(out); }
        });
        s.setExecutor(Executors.newFixedThreadPool(8));
        s.start();
    }
}
