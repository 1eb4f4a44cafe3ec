// Boot is a service's start-up in miniature, for the start-up boost's
// measurement (agent/startup_jvm_real_test.go): it loads every class of
// java.base's java.util, java.text and java.time trees (class loading), then
// warms up on two threads (a fixed number of map and string operations,
// what a JIT compiles while a service starts), prints "ready", the classes
// loaded, a checksum and its uptime in ms (the JVM's own start-up length),
// and exits; with a second argument "stay" it then waits, as a service
// that finished starting (the rig's boost step, hack/e2e-fleet/boost.sh).
import java.net.URI;
import java.nio.file.*;
import java.util.*;
import java.util.stream.*;

public class Boot {
    public static void main(String[] args) throws Exception {
        long rounds = args.length > 0 ? Long.parseLong(args[0]) : 3_000_000L;
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        int loaded = 0;
        for (String dir : new String[] {"java/util", "java/text", "java/time"}) {
            List<Path> classes;
            try (Stream<Path> s = Files.walk(jrt.getPath("/modules/java.base", dir))) {
                classes = s.filter(p -> p.toString().endsWith(".class")).collect(Collectors.toList());
            }
            for (Path p : classes) {
                String name = p.toString().substring("/modules/java.base/".length()).replace('/', '.').replace(".class", "");
                try {
                    Class.forName(name, true, ClassLoader.getSystemClassLoader());
                    loaded++;
                } catch (Throwable e) {
                    // some classes cannot be initialised alone: loading them counted
                }
            }
        }
        Thread[] ts = new Thread[2];
        long[] sums = new long[ts.length];
        for (int i = 0; i < ts.length; i++) {
            final int k = i;
            ts[i] = new Thread(() -> {
                HashMap<String, Long> m = new HashMap<>();
                long sum = 0;
                for (long r = 0; r < rounds; r++) {
                    String key = Long.toString(r % 4096, 36);
                    sum += m.merge(key, r, Long::sum);
                }
                sums[k] = sum;
            });
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        long uptimeMs = java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime();
        System.out.println("ready " + loaded + " " + (sums[0] ^ sums[1]) + " " + uptimeMs);
        System.out.flush();
        if (args.length > 1 && args[1].equals("stay")) {
            Thread.sleep(Long.MAX_VALUE);
        }
    }
}
