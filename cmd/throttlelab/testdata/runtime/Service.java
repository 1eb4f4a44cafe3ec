import com.sun.net.httpserver.HttpServer;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

// A tiny HTTP service whose worker pool is sized from the processors the
// JVM sees (availableProcessors(): -XX:ActiveProcessorCount, or the
// container's limit, or the host's CPUs), as a thread pool in a service
// commonly is. GET /burn?cpu=5ms spins until the handling thread has used
// 5 ms of CPU (the project's burn request). It prints
// "listening on http://127.0.0.1:PORT processors=N" and serves until its
// standard input closes.
public class Service {
	static final ThreadMXBean mx = ManagementFactory.getThreadMXBean();

	static long cpuNanos(String query) {
		if (query == null) return 0;
		for (String kv : query.split("&")) {
			if (kv.startsWith("cpu=")) {
				String v = kv.substring(4);
				if (v.endsWith("ms")) return (long) (Double.parseDouble(v.substring(0, v.length() - 2)) * 1e6);
				if (v.endsWith("us")) return (long) (Double.parseDouble(v.substring(0, v.length() - 2)) * 1e3);
				if (v.endsWith("s")) return (long) (Double.parseDouble(v.substring(0, v.length() - 1)) * 1e9);
			}
		}
		return 0;
	}

	public static void main(String[] args) throws Exception {
		// TCP_NODELAY on the server's sockets: without it the JDK's server
		// writes the headers and the body apart, and Nagle's algorithm
		// holds the body until the client's delayed ACK, about 40 ms
		// (docs/runtimes.md), which is no part of the CPU limit's cost.
		System.setProperty("sun.net.httpserver.nodelay", "true");
		int procs = Runtime.getRuntime().availableProcessors();
		ExecutorService pool = Executors.newFixedThreadPool(procs);
		HttpServer srv = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 1024);
		srv.createContext("/burn", ex -> {
			long want = cpuNanos(ex.getRequestURI().getRawQuery());
			long end = mx.getCurrentThreadCpuTime() + want;
			double x = 1;
			while (mx.getCurrentThreadCpuTime() < end) {
				for (int i = 0; i < 10000; i++) x = x * 1.0000001 + 1e-9;
			}
			byte[] body = ("ok " + (x > 0 ? 1 : 0) + "\n").getBytes();
			ex.sendResponseHeaders(200, body.length);
			ex.getResponseBody().write(body);
			ex.close();
		});
		srv.createContext("/healthz", ex -> {
			ex.sendResponseHeaders(200, -1);
			ex.close();
		});
		srv.setExecutor(pool);
		srv.start();
		System.out.println("listening on http://127.0.0.1:" + srv.getAddress().getPort() + " processors=" + procs);
		System.out.flush();
		while (System.in.read() >= 0) {
		}
		srv.stop(0);
		pool.shutdownNow();
	}
}
