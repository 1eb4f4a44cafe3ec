/* The Mandelbrot escape-time kernel of workload/mandelbrot.go, in C, for the
 * kernel benchmark: same region, same pixel centres, same loop. Built with
 * gcc -O2 -ffp-contract=off (no fused multiply-add, like the Go kernel), it must
 * count exactly the iterations the Go kernel counts.
 *
 * Usage: kernel MAXITER X Y [X Y ...]
 * Prints, per tile: "x,y iterations cpu_ns" (thread CPU time). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WIDTH 34000
#define TILE 200
static const double real_min = -2.25, imag_max = 1.35;
static const double step = 3.0 / WIDTH;

static int escape(double cr, double ci, int max_iter) {
	double x = 0, y = 0;
	for (int i = 0; i < max_iter; i++) {
		double x2 = x * x, y2 = y * y;
		if (x2 + y2 > 4) return i;
		double xy = x * y;
		y = xy + xy + ci;
		x = x2 - y2 + cr;
	}
	return max_iter;
}

static long long thread_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
	if (argc < 4 || argc % 2 != 0) {
		fprintf(stderr, "usage: kernel MAXITER X Y [X Y ...]\n");
		return 2;
	}
	int max_iter = atoi(argv[1]);
	for (int a = 2; a + 1 < argc; a += 2) {
		int tx = atoi(argv[a]), ty = atoi(argv[a + 1]);
		unsigned long long total = 0;
		long long t0 = thread_ns();
		for (int j = 0; j < TILE; j++) {
			double ci = -(-imag_max + ((double)(ty * TILE + j) + 0.5) * step);
			for (int i = 0; i < TILE; i++) {
				double cr = real_min + ((double)(tx * TILE + i) + 0.5) * step;
				total += (unsigned long long)escape(cr, ci, max_iter);
			}
		}
		long long t1 = thread_ns();
		printf("%d,%d %llu %lld\n", tx, ty, total, t1 - t0);
	}
	return 0;
}
